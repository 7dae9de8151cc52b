package finetune_test

import (
	"context"
	"fmt"

	"github.com/paretonav/paretonav/finetune"
)

// A two-task quadratic problem trained by plain descent on 0.75·a + 0.25·b.
func ExampleRun() {
	s := &finetune.Settings{Method: gd{}, Criterion: weighted{0.75, 0.25}, LR: 0.1, Steps: 300}
	res, err := finetune.Run(context.Background(), newQuad(3, -2), nil, nil, s, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%v after %d steps: θ = (%.4f, %.4f), losses (%.4f, %.4f), g = %.6f\n",
		res.Status, res.Steps, res.Points[0].Params[0], res.Points[0].Params[1], res.Losses()[0], res.Losses()[1], res.G())
	// Output:
	// StepLimit after 300 steps: θ = (0.5000, 1.0000), losses (0.1250, 1.1250), g = 0.000000
}

// Every step's batch is drawn from a seeded permutation of the examples.
func ExampleDataset_Batches() {
	d := regressionData(7)
	for _, b := range d.Batches(1, 0, 3) {
		fmt.Println(len(b))
	}
	// Output:
	// 3
	// 3
	// 1
}
