package pareto_test

import (
	"fmt"

	"github.com/paretonav/paretonav/png/pareto"
)

func ExampleNonDominated() {
	losses := [][]float64{{1, 3}, {2, 2}, {2.5, 2.5}, {3, 1}, {2, 2}}
	fmt.Println(pareto.NonDominated(losses))
	// Output:
	// [0 1 3]
}

func ExampleHypervolume() {
	front := [][]float64{{1, 3}, {2, 2}, {3, 1}}
	fmt.Printf("%.2f\n", pareto.Hypervolume(front, []float64{4, 4}))
	cube := [][]float64{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}
	fmt.Printf("%.2f\n", pareto.Hypervolume(cube, []float64{2, 2, 2}))
	// Output:
	// 6.00
	// 4.00
}

func ExampleIGDPlus() {
	reference := [][]float64{{0, 1}, {0.5, 0.5}, {1, 0}}
	found := [][]float64{{0.1, 1}, {1, 0.1}}
	fmt.Printf("%.4f\n", pareto.IGDPlus(found, reference))
	// Output:
	// 0.2333
}

func ExampleForAccuracies() {
	// Task accuracies of three models; higher is better.
	acc := [][]float64{{0.90, 0.80}, {0.85, 0.88}, {0.80, 0.85}}
	ref := pareto.ForAccuracies([][]float64{{0.5, 0.5}})[0]
	neg := pareto.ForAccuracies(acc)
	fmt.Println(pareto.NonDominated(neg))
	fmt.Printf("%.4f\n", pareto.Hypervolume(neg, ref))
	// Output:
	// [0 1]
	// 0.1480
}
