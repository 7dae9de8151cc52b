package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"
)

// stoppedText says in words why a run with status (finetune.Status's
// name, as results and JSON give it) stopped after steps steps; limit
// names what set the step count (stepLimit).
func stoppedText(status string, steps int, limit string) string {
	switch status {
	case "StepLimit":
		return fmt.Sprintf("stopped after %d steps (%s)", steps, limit)
	case "Interrupted":
		return fmt.Sprintf("interrupted after %d steps", steps)
	case "Failed":
		return fmt.Sprintf("failed after %d steps", steps)
	case "NotTerminated":
		return fmt.Sprintf("still running after %d steps", steps)
	}
	return fmt.Sprintf("%s after %d steps", status, steps)
}

// stepLimit names the flag that set a run's number of steps: --epochs N
// when it was given and --steps was 0, else --steps.
func stepLimit(c *ucli.Context) string {
	if c.Int("steps") == 0 && c.Int("epochs") > 0 {
		return fmt.Sprintf("--epochs %d", c.Int("epochs"))
	}
	return "--steps"
}
