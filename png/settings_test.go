package png

import "testing"

// TestWithDefaults checks that zero fields take their defaults, set fields
// are kept, and the settings PNG checks (resolve) are those WithDefaults
// gives.
func TestWithDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Settings
		want Settings
	}{
		{"zero", Settings{}, Settings{Alpha: DefaultAlpha, Gamma: DefaultGamma, Discount: DefaultDiscount}},
		{"set", Settings{Alpha: 2, Gamma: 0.01, Discount: 0.5, ThresholdCap: 3, MaxTradeoff: 4, Workers: 5},
			Settings{Alpha: 2, Gamma: 0.01, Discount: 0.5, ThresholdCap: 3, MaxTradeoff: 4, Workers: 5}},
		{"gamma only", Settings{Gamma: 0.3}, Settings{Alpha: DefaultAlpha, Gamma: 0.3, Discount: DefaultDiscount}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.WithDefaults(); got != tc.want {
				t.Errorf("WithDefaults() = %+v, want %+v", got, tc.want)
			}
			got, err := tc.in.resolve()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("resolve() = %+v, want %+v", got, tc.want)
			}
		})
	}
}
