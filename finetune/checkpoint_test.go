package finetune_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paretonav/paretonav/finetune"
)

// cancelAt is a recorder that cancels the run's context after step k.
type cancelAt struct {
	k      int
	cancel context.CancelFunc
}

func (c cancelAt) Init(*finetune.Config) error { return nil }
func (c cancelAt) Record(st *finetune.Step) error {
	if st.Step == c.k {
		c.cancel()
	}
	return nil
}
func (c cancelAt) Done(*finetune.Result) error { return nil }

func TestInterruptAndResumeBitExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    finetune.Settings
		stop int
	}{
		{"sgd", finetune.Settings{LR: 0.05}, 7},
		{"momentum cosine", finetune.Settings{LR: 0.05, Momentum: 0.9, LRSchedule: "cosine"}, 13},
		{"adam at an epoch boundary", finetune.Settings{Optimizer: "adam", LR: 0.01}, 10},
		{"adam every-5 checkpoints", finetune.Settings{Optimizer: "adam", LR: 0.01, CheckpointEvery: 5}, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := regressionData(23)
			s := tc.s
			s.Method, s.Steps, s.BatchSize, s.Seed = gd{}, 37, 5, 11 // 5 batches per epoch, the last of 3
			s.CheckpointPath = filepath.Join(t.TempDir(), "uninterrupted.ckpt")
			want, err := finetune.Run(context.Background(), &regression{theta: []float32{1, -1, 2}}, data, nil, &s, nil)
			if err != nil {
				t.Fatal(err)
			}

			s.CheckpointPath = filepath.Join(t.TempDir(), "run.ckpt")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := &regression{theta: []float32{1, -1, 2}}
			res, err := finetune.Run(ctx, p, data, nil, &s, cancelAt{tc.stop, cancel})
			var ie *finetune.InterruptedError
			if !errors.As(err, &ie) || !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want an *InterruptedError wrapping context.Canceled", err)
			}
			if res.Status != finetune.Interrupted || res.Steps != tc.stop || ie.Checkpoint != s.CheckpointPath {
				t.Fatalf("status %v after %d steps, checkpoint %q; want Interrupted after %d, %q", res.Status, res.Steps, ie.Checkpoint, tc.stop, s.CheckpointPath)
			}

			fresh := &regression{theta: make([]float32, 3)} // parameters come from the checkpoint
			got, err := finetune.Resume(context.Background(), s.CheckpointPath, fresh, data, nil, &s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Steps != want.Steps || !slices.Equal(got.Points[0].Params, want.Points[0].Params) {
				t.Errorf("resumed run ends after %d steps at %v, uninterrupted after %d at %v",
					got.Steps, got.Points[0].Params, want.Steps, want.Points[0].Params)
			}
			if !slices.Equal(got.Points[0].InitialLosses, want.Points[0].InitialLosses) || got.InitialF != want.InitialF {
				t.Errorf("resumed initial losses %v F %g, want %v %g", got.Points[0].InitialLosses, got.InitialF, want.Points[0].InitialLosses, want.InitialF)
			}
		})
	}
}

func TestCheckpointErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ckpt")
	s := finetune.Settings{Method: gd{}, Steps: 3, CheckpointPath: good, CheckpointEvery: 3}
	if _, err := finetune.Run(context.Background(), newQuad(1, 2), nil, nil, &s, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(good); err != nil {
		t.Error(err)
	} else if st.Mode().Perm() != 0o600 {
		t.Errorf("checkpoint file mode %v, want 0600", st.Mode().Perm())
	}
	garbage := filepath.Join(dir, "garbage.ckpt")
	os.WriteFile(garbage, []byte("not a checkpoint"), 0o644)
	for _, tc := range []struct {
		name, path string
		p          finetune.Problem
		want       string
	}{
		{"parameter count", good, newQuad(1, 2, 3), "2 parameters per model, the problem has 3"},
		{"magic", garbage, newQuad(1, 2), "not a paretonav checkpoint"},
		{"missing", filepath.Join(dir, "none.ckpt"), newQuad(1, 2), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := finetune.Resume(context.Background(), tc.path, tc.p, nil, nil, &s, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestCheckpointChecksum(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.ckpt")
	job := []byte(`{"command":"test"}`)
	s := finetune.Settings{Method: gd{}, Steps: 4, CheckpointPath: path, CheckpointEvery: 4, CheckpointJob: job}
	if _, err := finetune.Run(context.Background(), newQuad(1, 2), nil, nil, &s, nil); err != nil {
		t.Fatal(err)
	}
	info, err := finetune.ReadCheckpointInfo(path)
	if err != nil || info.Step != 4 || string(info.Job) != string(job) {
		t.Fatalf("ReadCheckpointInfo: %+v, %v; want step 4 and the job description", info, err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// One flipped bit anywhere: in the job description, the step, the
	// state, or the checksum itself.
	for _, at := range []int{16, 16 + len(job), len(good) / 2, len(good) - 33, len(good) - 1} {
		bad := slices.Clone(good)
		bad[at] ^= 1
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := finetune.ReadCheckpointInfo(path); !errors.Is(err, finetune.ErrCheckpointDamaged) {
			t.Errorf("byte %d of %d flipped: ReadCheckpointInfo: %v, want ErrCheckpointDamaged", at, len(good), err)
		}
		_, err := finetune.Resume(context.Background(), path, newQuad(1, 2), nil, nil, &s, nil)
		if !errors.Is(err, finetune.ErrCheckpointDamaged) || !strings.Contains(err.Error(), path) {
			t.Errorf("byte %d of %d flipped: Resume: %v, want ErrCheckpointDamaged naming the file", at, len(good), err)
		}
	}
}

func TestPeriodicCheckpointFailureKeepsTheRun(t *testing.T) {
	// A checkpoint folder that is a file: every periodic checkpoint fails,
	// the run still ends with its result and says why.
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	s := finetune.Settings{Method: gd{}, Steps: 4, CheckpointPath: filepath.Join(file, "run.ckpt"), CheckpointEvery: 2}
	res, err := finetune.Run(context.Background(), newQuad(1, 2), nil, nil, &s, nil)
	if err != nil || res.Status != finetune.StepLimit || res.Steps != 4 {
		t.Fatalf("run: %v, %+v; want 4 steps and StepLimit", err, res)
	}
	if res.CheckpointErr == nil {
		t.Error("Result.CheckpointErr is nil after failed checkpoints")
	}
}
