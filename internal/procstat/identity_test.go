package procstat

import (
	"os"
	"os/exec"
	"testing"
)

func TestIdentity(t *testing.T) {
	self := Identify(os.Getpid())
	if self.Start == 0 || !self.Alive() {
		t.Fatalf("this process: %+v, alive %v", self, self.Alive())
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if !Running(os.Getpid()) || Running(cmd.Process.Pid) {
		t.Errorf("Running: this process %v, an exited child %v", Running(os.Getpid()), Running(cmd.Process.Pid))
	}
	if gone := Identify(cmd.Process.Pid); gone.Start != 0 || gone.Alive() {
		t.Errorf("an exited child: %+v, alive %v", gone, gone.Alive())
	}
	if (Identity{PID: os.Getpid(), Start: self.Start + 1}).Alive() {
		t.Error("another start time counts as the same process")
	}
}
