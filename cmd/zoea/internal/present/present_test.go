package present

import "testing"

// Compact keeps every count within 6 characters, rounding at the unit boundaries instead of printing 1000.0k.
func TestCompact(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 9_999: "9999", 10_000: "10.0k", 123_456: "123.5k", 999_949: "999.9k", 999_950: "1.0M",
		1_105_046: "1.1M", 999_949_999: "999.9M", 1_000_000_000: "1.0B", 7_300_000_000_000: "7.3T", -25_000: "-25.0k",
	} {
		if got := Compact(n); got != want || len(got) > 6 {
			t.Errorf("Compact(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestGrouped(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 17_069_701: "17,069,701", -2_500: "-2,500"} {
		if got := Grouped(n); got != want {
			t.Errorf("Grouped(%d) = %q, want %q", n, got, want)
		}
	}
}
