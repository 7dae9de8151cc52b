package finetune

import (
	"bufio"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"io"
	"os"

	"github.com/paretonav/paretonav/internal/atomicfile"
	"github.com/paretonav/paretonav/png"
)

// Checkpoint file format (version 1):
//
//	bytes 0..7   magic "PNAVCKPT"
//	bytes 8..11  format version, uint32 little-endian
//	bytes 12..   a Checkpoint encoded with encoding/gob
//
// Floats travel through gob exactly, so a resumed run continues
// bit-identically. Files are written atomically: a temporary file in the
// same folder, fsync, rename over the target, fsync of the folder.
const (
	checkpointMagic   = "PNAVCKPT"
	CheckpointVersion = 1 // the format version this package writes and reads
)

// Checkpoint is the whole state of a run between two steps.
type Checkpoint struct {
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
		if _, err := io.WriteString(w, checkpointMagic); err != nil {
			return err
		}
		if err := binary.Write(w, binary.LittleEndian, uint32(CheckpointVersion)); err != nil {
			return err
		}
		return gob.NewEncoder(w).Encode(c)
	})
	if err != nil {
		return fmt.Errorf("finetune: checkpoint %s: %w", path, err)
	}
	return nil
}

// ReadCheckpoint reads a checkpoint written by WriteCheckpoint, checking
// its magic and version.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("finetune: checkpoint: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	head := make([]byte, len(checkpointMagic)+4)
	if _, err := io.ReadFull(r, head); err != nil || string(head[:len(checkpointMagic)]) != checkpointMagic {
		return nil, fmt.Errorf("finetune: checkpoint %s: not a paretonav checkpoint (want magic %q)", path, checkpointMagic)
	}
	if v := binary.LittleEndian.Uint32(head[len(checkpointMagic):]); v != CheckpointVersion {
		return nil, fmt.Errorf("finetune: checkpoint %s: format version %d, want %d", path, v, CheckpointVersion)
	}
	c := new(Checkpoint)
	if err := gob.NewDecoder(r).Decode(c); err != nil {
		return nil, fmt.Errorf("finetune: checkpoint %s: %w", path, err)
	}
	return c, nil
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
