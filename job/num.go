package job

import (
	"encoding/json"
	"math"
)

// Num is a float64 that marshals NaN and ±Inf as null (JSON has no such
// numbers).
type Num float64

// MarshalJSON implements json.Marshaler.
func (f Num) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

// Nums converts v to Nums.
func Nums(v []float64) []Num {
	out := make([]Num, len(v))
	for i, x := range v {
		out[i] = Num(x)
	}
	return out
}

// named maps names[i] to v[i].
func named(names []string, v []float64) map[string]Num {
	o := make(map[string]Num, len(names))
	for i, n := range names {
		o[n] = Num(v[i])
	}
	return o
}
