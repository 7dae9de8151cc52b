package finetune

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/paretonav/paretonav/internal/atomicfile"
	"github.com/paretonav/paretonav/png"
)

// Checkpoint file format (version 2):
//
//	bytes 0..7    magic "PNAVCKPT"
//	bytes 8..11   format version, uint32 little-endian
//	bytes 12..15  length L of the caller's job description, uint32 little-endian
//	bytes 16..    the job description (Checkpoint.Job, L bytes, opaque here)
//	next 8 bytes  Checkpoint.Step, int64 little-endian (read without decoding the state)
//	then          the Checkpoint encoded with encoding/gob (Job left out)
//	last 32 bytes SHA-256 of every byte before them
//
// Floats travel through gob exactly, so a resumed run continues
// bit-identically. The checksum is verified before anything is decoded:
// a file changed by one byte is refused. Files are written atomically: a
// temporary file in the same folder, fsync, rename over the target, fsync
// of the folder.
const (
	checkpointMagic   = "PNAVCKPT"
	CheckpointVersion = 2 // the format version this package writes and reads
)

// maxCheckpointJob bounds the job description read from a checkpoint (a
// resolved configuration is a few kilobytes).
const maxCheckpointJob = 16 << 20

// ErrCheckpointDamaged is matched (errors.Is) by the error of a checkpoint
// whose checksum does not match its content.
var ErrCheckpointDamaged = errors.New("checksum mismatch: the file was changed or damaged after it was written")

// Checkpoint is the whole state of a run between two steps.
type Checkpoint struct {
	// Job is the caller's description of the run (Settings.CheckpointJob:
	// the resolved job configuration), stored as it is.
	Job       []byte
	NumParams int      // n, checked against the Problem on load
	Tasks     []string // task names, checked against the Problem on load
	Step      int      // steps completed
	Epoch     int      // epoch of the next batch
	Pos       int      // index of the next batch within its epoch
	Seed      int64    // shuffle seed (batches are a function of Seed and Epoch)
	LRScale   float64  // product of the retry halvings so far
	InitialF  float64
	HasPrev   bool // PrevParams, PrevOpt, PrevDir, PrevUpd hold the last good state
	PrevStep  int  // 0-based step whose update the Prev state undoes
	Points    []PointCheckpoint
}

// PointCheckpoint is one model's state.
type PointCheckpoint struct {
	Params        []float32
	Opt           OptState
	PNG           png.State
	InitialLosses []float64
	InitialF      float64
	PrevParams    []float32
	PrevOpt       OptState
	PrevDir       []float32
	PrevUpd       []float32 // the update made instead of the optimizer's own for PrevDir (nil: none)
	// Start holds the parameters θ₀ the run started from when a criterion
	// reads drift (nil otherwise).
	Start []float32
}

// WriteCheckpoint writes c to path atomically (see the format above), with
// mode 0600, readable by its owner only.
func WriteCheckpoint(path string, c *Checkpoint) error {
	err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
		h := sha256.New()
		hw := io.MultiWriter(w, h)
		head := make([]byte, 0, len(checkpointMagic)+8)
		head = append(head, checkpointMagic...)
		head = binary.LittleEndian.AppendUint32(head, CheckpointVersion)
		head = binary.LittleEndian.AppendUint32(head, uint32(len(c.Job)))
		if _, err := hw.Write(head); err != nil {
			return err
		}
		if _, err := hw.Write(c.Job); err != nil {
			return err
		}
		if _, err := hw.Write(binary.LittleEndian.AppendUint64(nil, uint64(c.Step))); err != nil {
			return err
		}
		state := *c
		state.Job = nil
		if err := gob.NewEncoder(hw).Encode(&state); err != nil {
			return err
		}
		_, err := w.Write(h.Sum(nil))
		return err
	})
	if err != nil {
		return fmt.Errorf("finetune: checkpoint %s: %w", path, err)
	}
	return nil
}

// CheckpointInfo is what a checkpoint says about its run without its
// state: the job description and the steps completed.
type CheckpointInfo struct {
	Job  []byte
	Step int
}

// ReadCheckpointInfo verifies the checksum of the checkpoint at path and
// returns its job description and step, without decoding the state.
func ReadCheckpointInfo(path string) (*CheckpointInfo, error) {
	f, r, err := openCheckpoint(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCheckpointHead(path, r)
}

// ReadCheckpoint reads a checkpoint written by WriteCheckpoint, checking
// its magic, version and checksum.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	f, r, err := openCheckpoint(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := readCheckpointHead(path, r)
	if err != nil {
		return nil, err
	}
	c := new(Checkpoint)
	if err := gob.NewDecoder(r).Decode(c); err != nil {
		return nil, fmt.Errorf("finetune: checkpoint %s: %w", path, err)
	}
	c.Job = info.Job
	return c, nil
}

// openCheckpoint opens the checkpoint at path, verifies its checksum and
// returns the file with a reader of everything before the checksum.
func openCheckpoint(path string) (*os.File, *bufio.Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("finetune: checkpoint: %w", err)
	}
	fail := func(err error) (*os.File, *bufio.Reader, error) {
		f.Close()
		return nil, nil, fmt.Errorf("finetune: checkpoint %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if !st.Mode().IsRegular() {
		return fail(errors.New("not a regular file"))
	}
	head := make([]byte, len(checkpointMagic)+4)
	if _, err := io.ReadFull(f, head); err != nil || string(head[:len(checkpointMagic)]) != checkpointMagic {
		return fail(fmt.Errorf("not a paretonav checkpoint (want magic %q)", checkpointMagic))
	}
	if v := binary.LittleEndian.Uint32(head[len(checkpointMagic):]); v != CheckpointVersion {
		return fail(fmt.Errorf("format version %d, want %d (a checkpoint of another paretonav version: start the run again with --force)", v, CheckpointVersion))
	}
	body := st.Size() - sha256.Size
	if body < int64(len(head)) {
		return fail(ErrCheckpointDamaged)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, body)); err != nil {
		return fail(err)
	}
	sum := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, sum); err != nil {
		return fail(err)
	}
	if !bytes.Equal(sum, h.Sum(nil)) {
		return fail(ErrCheckpointDamaged)
	}
	if _, err := f.Seek(int64(len(head)), io.SeekStart); err != nil {
		return fail(err)
	}
	return f, bufio.NewReader(io.LimitReader(f, body-int64(len(head)))), nil
}

// readCheckpointHead reads the job description and step that follow the
// magic and version.
func readCheckpointHead(path string, r io.Reader) (*CheckpointInfo, error) {
	var n uint32
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, fmt.Errorf("finetune: checkpoint %s: %w", path, err)
	}
	if n > maxCheckpointJob {
		return nil, fmt.Errorf("finetune: checkpoint %s: job description of %d bytes, at most %d", path, n, maxCheckpointJob)
	}
	info := &CheckpointInfo{Job: make([]byte, n)}
	if _, err := io.ReadFull(r, info.Job); err != nil {
		return nil, fmt.Errorf("finetune: checkpoint %s: %w", path, err)
	}
	var step int64
	if err := binary.Read(r, binary.LittleEndian, &step); err != nil {
		return nil, fmt.Errorf("finetune: checkpoint %s: %w", path, err)
	}
	info.Step = int(step)
	return info, nil
}

// check verifies that c fits ps (count, parameter count, tasks).
func (c *Checkpoint) check(path string, ps []Problem) error {
	if len(c.Points) != len(ps) {
		return fmt.Errorf("finetune: checkpoint %s holds %d models, the run has %d", path, len(c.Points), len(ps))
	}
	n := ps[0].NumParams()
	if c.NumParams != n {
		return fmt.Errorf("finetune: checkpoint %s holds %d parameters per model, the problem has %d", path, c.NumParams, n)
	}
	tasks := ps[0].Tasks()
	if len(tasks) != len(c.Tasks) {
		return fmt.Errorf("finetune: checkpoint %s has tasks %v, the problem has %v", path, c.Tasks, tasks)
	}
	for i := range tasks {
		if tasks[i] != c.Tasks[i] {
			return fmt.Errorf("finetune: checkpoint %s has tasks %v, the problem has %v", path, c.Tasks, tasks)
		}
	}
	for k, pc := range c.Points {
		if len(pc.Params) != n {
			return fmt.Errorf("finetune: checkpoint %s model %d has %d parameters, want %d", path, k, len(pc.Params), n)
		}
	}
	return nil
}
