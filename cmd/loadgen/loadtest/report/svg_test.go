package report

import "testing"

func TestNiceCeil(t *testing.T) {
	for v, want := range map[float64]float64{0: 1, 7: 10, 10: 10, 11: 20, 1234: 2000, 7854: 10000, 40000: 50000} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
}
