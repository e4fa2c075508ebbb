package limp

import (
	"slices"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	want := []string{"cpu", "crash", "disk", "nic", "partition"}
	if got := Kinds(); !slices.Equal(got, want) {
		t.Fatalf("Kinds() = %q, want %q", got, want)
	}
	factor := map[string]bool{"nic": true, "disk": true, "cpu": true}
	for _, name := range want {
		k, ok := Lookup(name)
		if !ok || k.Name != name || k.Description == "" {
			t.Errorf("Lookup(%q) = %+v, %v", name, k, ok)
		}
		if TakesFactor(name) != factor[name] || k.Factor != factor[name] {
			t.Errorf("%s: TakesFactor %v, Kind.Factor %v, want %v", name, TakesFactor(name), k.Factor, factor[name])
		}
		inj, err := New(name, Options{})
		if err != nil {
			t.Errorf("New(%q): %v", name, err)
			continue
		}
		if inj.Kind() != name {
			t.Errorf("New(%q) makes an injector of kind %q", name, inj.Kind())
		}
	}
	if _, ok := Lookup("gpu"); ok || TakesFactor("gpu") {
		t.Error("gpu is known")
	}
	_, err := New("gpu", Options{})
	if err == nil || err.Error() != `fault "gpu": want one of cpu, crash, disk, nic, partition` {
		t.Errorf("New(gpu): %v", err)
	}
	if _, err := New("crash", Options{RestartAfter: -1}); err == nil {
		t.Error("negative restart delay accepted")
	}
	if _, err := New("cpu", Options{CPUMode: "quantum"}); err == nil || !strings.Contains(err.Error(), "quantum") {
		t.Errorf("cpu mode quantum: %v", err)
	}
}

func TestRegisterRejects(t *testing.T) {
	mk := func(Options) (Injector, error) { return NIC{}, nil }
	for name, k := range map[string]Kind{
		"twice":          {Name: "nic", New: mk},
		"no name":        {New: mk},
		"no constructor": {Name: "gpu"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			Register(k)
		}()
	}
	if got := Kinds(); len(got) != 5 {
		t.Errorf("after the rejected registrations: %q", got)
	}
}
