package criterion_test

import (
	"errors"
	"fmt"

	"github.com/paretonav/paretonav/png/criterion"
)

func ExampleParse() {
	tasks := []string{"seg", "depth", "normal"}
	c, err := criterion.Parse("(seg*normal)/(0.001+depth)", tasks)
	if err != nil {
		fmt.Println(err)
		return
	}
	grad := make([]float64, 3)
	f, err := c.Eval([]float64{0.5, 0.999, 2}, grad)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c)
	fmt.Printf("F = %.4f, ∂F/∂ℓ = [%.4f %.4f %.4f]\n", f, grad[0], grad[1], grad[2])
	// Output:
	// seg * normal / (0.001 + depth)
	// F = 1.0000, ∂F/∂ℓ = [2.0000 -1.0000 0.5000]
}

func ExampleParse_preset() {
	c, err := criterion.Parse("wd: 0.2, 0.8", []string{"l1", "l2"})
	if err != nil {
		fmt.Println(err)
		return
	}
	grad := make([]float64, 2)
	f, err := c.Eval([]float64{0.4, 0.4}, grad)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c)
	fmt.Printf("F = %.2f, ∂F/∂ℓ = [%.2f %.2f]\n", f, grad[0], grad[1])
	// Output:
	// wd:0.2,0.8
	// F = 0.40, ∂F/∂ℓ = [2.00 -1.00]
}

func ExampleParse_errors() {
	tasks := []string{"seg", "depth"}
	for _, expr := range []string{"seg^2", "log(seg", "seg + dpth", "wd:0.5", "energy"} {
		_, err := criterion.Parse(expr, tasks)
		fmt.Println(err)
	}
	_, err := criterion.Parse("seg + dpth", tasks)
	var unknown *criterion.UnknownNameError
	fmt.Println(errors.As(err, &unknown), unknown.Known)
	// Output:
	// criterion: column 4: '^' is not an operator; write powers as pow(a, b)
	// criterion: column 8: expected ',' or ')' to close log( at column 4, found end of expression
	// criterion: column 7: unknown task "dpth"; known tasks: seg, depth
	// criterion: preset wd: got 1 references, expected 2 (one per task: seg, depth)
	// criterion: preset energy: energy is a multi-point criterion: it spreads several models over the front; use it with --models N (front or synth), not with one model
	// true [seg depth]
}

func ExampleCriterion_Eval_domainError() {
	c, _ := criterion.Parse("log(l1 - 0.5)", []string{"l1"})
	_, err := c.Eval([]float64{0.25}, nil)
	fmt.Println(err)
	// Output:
	// criterion: log of non-positive value -0.25 in log(l1 - 0.5)
}

func ExampleParseMulti() {
	e, err := criterion.ParseMulti("energy:eps=0", []string{"l1", "l2"})
	if err != nil {
		fmt.Println(err)
		return
	}
	L := [][]float64{{0, 1}, {1, 0}}
	grad := [][]float64{make([]float64, 2), make([]float64, 2)}
	E, err := e.EvalMulti(L, grad)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e)
	fmt.Printf("E = %.2f, ∂E/∂L_1 = %.2f, ∂E/∂L_2 = %.2f\n", E, grad[0], grad[1])
	// Output:
	// energy:eps=0
	// E = 1.00, ∂E/∂L_1 = [1.00 -1.00], ∂E/∂L_2 = [-1.00 1.00]
}
