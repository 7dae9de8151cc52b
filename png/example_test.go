package png_test

import (
	"fmt"

	"github.com/paretonav/paretonav/png"
)

// Two task gradients at an obtuse angle: the min-norm point of their hull
// lies between them.
func ExampleMinNorm() {
	J := png.NewJacobian(2, 2)
	copy(J.Row(0), []float32{1, 0})
	copy(J.Row(1), []float32{-1, 1})
	K := make([]float64, 4)
	png.Gram(K, J, 1)
	omega, g := png.MinNorm(K, 2)
	fmt.Printf("ω = [%.2f %.2f], g = %.2f\n", omega[0], omega[1], g)
	// Output: ω = [0.60 0.40], g = 0.20
}

// A criterion that wants task 1 down and task 2 up (c = ∂F/∂ℓ = (1, −1)):
// the control keeps task 2 decreasing at rate φ = α·g.
func ExamplePNG_Direction() {
	J := png.NewJacobian(2, 2)
	copy(J.Row(0), []float32{1, 0})
	copy(J.Row(1), []float32{0, 1})
	grad := png.Gradient{Coef: []float64{1, -1}}
	var st png.State
	v := make([]float32, 2)
	info, err := png.PNG{}.Direction(v, J, grad, &st)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("g = %.2f, e = %.2f, control on: %v, φ = %.2f\n", info.G, info.E, info.ControlOn, info.Phi)
	fmt.Printf("λ = %.2f, v = %.2f\n", info.Lambda, v)
	// Output:
	// g = 0.50, e = 0.10, control on: true, φ = 0.25
	// λ = [0.00 1.25], v = [1.00 0.25]
}

// The dual of a PNG step with orthonormal gradients: λ_i = max(0, −b_i).
func ExampleSolveDual() {
	K := []float64{1, 0, 0, 1}
	lambda, err := png.SolveDual(K, 2, []float64{0.75, -1.25})
	fmt.Println(lambda, err)
	// Output: [0 1.25] <nil>
}

// MGD moves along the min-norm element of the gradients' hull.
func ExampleMGD_Direction() {
	J := png.NewJacobian(2, 2)
	copy(J.Row(0), []float32{1, 0})
	copy(J.Row(1), []float32{0, 1})
	v := make([]float32, 2)
	info, _ := png.MGD{}.Direction(v, J, png.Gradient{}, nil)
	fmt.Printf("ω = %.2f, v = %.2f, ‖v‖² = g = %.2f\n", info.Omega, v, info.G)
	// Output: ω = [0.50 0.50], v = [0.50 0.50], ‖v‖² = g = 0.50
}
