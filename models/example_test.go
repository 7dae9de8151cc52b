package models_test

import (
	"fmt"

	"github.com/paretonav/paretonav/models"
)

func ExampleLeNet2() {
	m := models.LeNet2(1)
	fmt.Println(m.Graph.Input[0].GetName(), len(m.Graph.Node), "nodes")
	for _, o := range m.Graph.Output {
		fmt.Println(o.GetName())
	}
	fmt.Println(models.CountParams(m), "parameters")
	// Output:
	// x 13 nodes
	// logp_left
	// logp_right
	// 31910 parameters
}

func ExampleMTANParams() {
	fmt.Println(models.MTANParams(models.MTANConfig{}))         // full size, nothing allocated
	fmt.Println(models.MTANParams(models.MTANConfig{Width: 8})) // a small one for tests
	// Output:
	// 44229073
	// 699657
}

func ExampleMTAN() {
	m := models.MTAN(models.MTANConfig{Width: 4, InputHeight: 64, InputWidth: 96, Seed: 1})
	for _, o := range m.Graph.Output {
		var dims []string
		for _, d := range o.GetType().GetTensorType().GetShape().GetDim() {
			if d.GetDimParam() != "" {
				dims = append(dims, d.GetDimParam())
			} else {
				dims = append(dims, fmt.Sprint(d.GetDimValue()))
			}
		}
		fmt.Println(o.GetName(), dims)
	}
	// Output:
	// seg_logp [N 13 64 96]
	// depth [N 1 64 96]
	// normal [N 3 64 96]
}
