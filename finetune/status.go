package finetune

import "fmt"

// Status says why a run stopped. It is not an error: reaching the step
// limit is the normal end of a run (gonum optimize's convention).
type Status int

// Statuses a run can end with.
const (
	// NotTerminated is the status of a run that has not stopped.
	NotTerminated Status = iota
	// StepLimit: the run did the number of steps (or epochs) it was given.
	StepLimit
	// Interrupted: the context was cancelled (SIGINT, SIGTERM, a deadline);
	// Run also returns an *InterruptedError.
	Interrupted
	// Failed: the run stopped on an error (non-finite values that retries
	// did not cure, an evaluation or recorder error).
	Failed
)

var statusNames = [...]string{"NotTerminated", "StepLimit", "Interrupted", "Failed"}

// String returns the status's name.
func (s Status) String() string {
	if s < 0 || int(s) >= len(statusNames) {
		return fmt.Sprintf("Status(%d)", int(s))
	}
	return statusNames[s]
}

// Verb says in a word how a run with status s ended, for people (String
// gives the name, for machines): "stopped" (at its step limit),
// "interrupted", "failed" or "running".
func (s Status) Verb() string {
	switch s {
	case StepLimit:
		return "stopped"
	case Interrupted:
		return "interrupted"
	case Failed:
		return "failed"
	case NotTerminated:
		return "running"
	}
	return s.String()
}

// MarshalText writes the status's name (for JSON logs and results).
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
