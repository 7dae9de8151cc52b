package batch

// BatchStatus is a batch's state: every job's, and how many are in each
// state.
type BatchStatus struct {
	Dir    string         `json:"dir"`
	Counts map[string]int `json:"counts"`
	Jobs   []JobState     `json:"jobs"`
}

// Status reads the state of every job of the batch in dir (its
// jobs.json and job folders).
func Status(dir string) (*BatchStatus, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	st := &BatchStatus{Dir: dir, Counts: map[string]int{StateDone: 0, StateRunning: 0, StateFailed: 0, StatePending: 0}}
	for _, j := range m.Jobs {
		s := StateOf(dir, j)
		st.Counts[s.State]++
		st.Jobs = append(st.Jobs, s)
	}
	return st, nil
}
