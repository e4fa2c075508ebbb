package prom

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

func hist(sum float64, count uint64) *dto.Histogram {
	return &dto.Histogram{SampleSum: proto.Float64(sum), SampleCount: proto.Uint64(count)}
}

func TestIntervalMeans(t *testing.T) {
	var m IntervalMeans
	if v, ok := m.Mean("a", hist(10, 5)); !ok || v != 2 {
		t.Fatalf("first: %v %v, want 2 true", v, ok)
	}
	if _, ok := m.Mean("a", hist(10, 5)); ok {
		t.Fatal("no new observations should give no mean")
	}
	if v, ok := m.Mean("a", hist(40, 15)); !ok || v != 3 {
		t.Fatalf("interval: %v %v, want 3 true", v, ok)
	}
	if v, ok := m.Mean("a", hist(4, 1)); !ok || v != 4 {
		t.Fatalf("after restart: %v %v, want 4 true", v, ok)
	}
}
