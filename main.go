// Command paretonav fine-tunes multi-task ONNX models inside the Pareto set of
// their task losses toward a user's criterion (Pareto Navigation Gradient
// Descent, Ye & Liu, UAI 2022). Run "paretonav help" for the commands.
package main

import (
	"fmt"
	"os"

	"github.com/paretonav/paretonav/cli"
)

func main() {
	if err := cli.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "paretonav:", err)
		os.Exit(cli.ExitCode(err))
	}
}
