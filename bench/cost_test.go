package bench

import (
	"context"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/paretonav/paretonav/backend"
	"github.com/paretonav/paretonav/finetune"
	"github.com/paretonav/paretonav/importer"
	"github.com/paretonav/paretonav/importer/onnxpb"
	"github.com/paretonav/paretonav/models"
	"github.com/paretonav/paretonav/png"
	"github.com/paretonav/paretonav/png/criterion"
)

// cpuTime is the process's user+system CPU time so far: on a shared
// machine steadier than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchNets(b *testing.B, n int) []*backend.Model {
	b.Helper()
	tasks := benchTasks(b)
	p0 := models.LeNet2(1)
	out := make([]*backend.Model, n)
	for k := range out {
		md, err := backend.Open(&importer.Model{Proto: proto.Clone(p0).(*onnxpb.ModelProto)}, tasks, backend.Options{})
		if err != nil {
			b.Fatal(err)
		}
		out[k] = md
	}
	return out
}

func benchTasks(b *testing.B) []backend.Task {
	b.Helper()
	var tasks []backend.Task
	for _, s := range Tasks {
		t, err := backend.ParseTask(s)
		if err != nil {
			b.Fatal(err)
		}
		tasks = append(tasks, t)
	}
	return tasks
}

func benchSet(b *testing.B, n int) *finetune.Dataset {
	b.Helper()
	a, err := fakeData("fake", "train", n, 1)
	if err != nil {
		b.Fatal(err)
	}
	d, err := finetune.NewDataset(a)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkModelStep measures what Budget.Estimate calls StepCPU256: the
// CPU time of one model-step of the benchmark at batch 256, through the
// training loop (forward pass, both task gradients, direction, Adam),
// for a single linear-scalarization model (phase 1, linear in phase 2)
// and for the 5 PNG models trained together (mgd, epo and png in
// phase 2); cpu-s/model-step is the figure to compare.
func BenchmarkModelStep(b *testing.B) {
	train := benchSet(b, 2048)
	for _, tc := range []struct {
		name   string
		models int
	}{{"linear", 1}, {"png5", 5}} {
		b.Run(tc.name, func(b *testing.B) {
			nets := benchNets(b, tc.models)
			s := &finetune.Settings{Optimizer: "adam", LR: 1e-3, Steps: b.N, BatchSize: 256, Seed: 1, Workers: 2}
			ps := make([]finetune.Problem, len(nets))
			for k, md := range nets {
				ps[k] = md
			}
			var err error
			b.ResetTimer()
			cpu0 := cpuTime()
			if tc.models == 1 {
				s.Method = png.Linear{Weights: []float64{0.3, 0.7}}
				_, err = finetune.Run(context.Background(), ps[0], train, nil, s, nil)
			} else {
				s.Method = png.PNG{}
				if s.Multi, err = criterion.ParseMulti("energy", []string{"left", "right"}); err != nil {
					b.Fatal(err)
				}
				_, err = finetune.RunMulti(context.Background(), ps, train, nil, s, nil)
			}
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N*tc.models), "cpu-s/model-step")
		})
	}
}

// BenchmarkScore measures what Budget.Estimate calls ForwardCPU256: the
// CPU time of scoring one model on 256 test pairs (score: one forward
// pass giving both losses and accuracies).
func BenchmarkScore(b *testing.B) {
	test := benchSet(b, 256)
	md := benchNets(b, 1)[0]
	tasks := benchTasks(b)
	if _, _, err := score(md, tasks, test, 256); err != nil { // compile
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		if _, _, err := score(md, tasks, test, 256); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/batch")
}

// BenchmarkCompile measures what Budget.Estimate leaves out: opening a
// LeNet2 and compiling its graphs at batch 256 (the training step's, with
// the Jacobian, and scoring's forward pass), which Run pays once per
// model, here with one step and one scored batch included (measured here:
// 0.138 s of CPU per model, against 0.100 + 0.034 s for the step and the
// batch alone: compiling costs a few milliseconds).
func BenchmarkCompile(b *testing.B) {
	test := benchSet(b, 256)
	batch := test.Slice(0, 256)
	tasks := benchTasks(b)
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		md := benchNets(b, 1)[0]
		losses := make([]float64, len(tasks))
		jac := png.NewJacobian(len(tasks), md.NumParams())
		if err := md.Evaluate(batch, losses, &jac); err != nil {
			b.Fatal(err)
		}
		if _, _, err := score(md, tasks, test, 256); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/model")
}
