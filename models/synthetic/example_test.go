package synthetic_test

import (
	"fmt"

	"github.com/paretonav/paretonav/models/synthetic"
	"github.com/paretonav/paretonav/png"
)

func ExampleNew() {
	p, err := synthetic.New("zdt2v")
	if err != nil {
		fmt.Println(err)
		return
	}
	losses := make([]float64, 2)
	jac := png.NewJacobian(2, p.NumParams())
	if err := p.Evaluate(nil, losses, &jac); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Tasks(), p.NumParams())
	fmt.Printf("ℓ = (%.4f, %.4f)\n", losses[0], losses[1])
	_, err = synthetic.New("zdt3")
	fmt.Println(err)
	// Output:
	// [l1 l2] 3
	// ℓ = (0.8516, 9.8542)
	// synthetic: unknown problem "zdt3"; known problems: exp2, zdt2v
}

func ExampleExp2Point() {
	for _, t := range []float64{1, 0, -1} {
		l := synthetic.Exp2Point(t)
		fmt.Printf("t = %2.0f: ℓ = (%.4f, %.4f)\n", t, l[0], l[1])
	}
	// Output:
	// t =  1: ℓ = (0.0000, 0.9817)
	// t =  0: ℓ = (0.6321, 0.6321)
	// t = -1: ℓ = (0.9817, 0.0000)
}

func ExampleProblem_Front() {
	for _, pt := range synthetic.ZDT2V().Front(3) {
		fmt.Printf("(%.2f, %.2f)\n", pt[0], pt[1])
	}
	// Output:
	// (0.00, 1.00)
	// (0.50, 0.75)
	// (1.00, 0.00)
}
