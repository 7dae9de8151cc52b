// Package slurmtest starts and stops a real single-node Slurm cluster
// (Debian's slurmctld, slurmd and munge) for tests: configuration, state
// and logs in one folder, free ports, the daemons in the foreground as children of
// the test, and on Stop every job cancelled and every daemon it started
// stopped by its PID. Its tests run the built paretonav program end to
// end: a batch on a Slurm job array, and a batch run under SIGTERM.
package slurmtest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Programs the cluster needs.
var programs = []string{"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "sbatch", "squeue", "scancel", "sinfo", "munge", "unmunge"}

// Available says why a cluster cannot be started here (nil: it can).
func Available() error {
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("slurmtest: %s not installed (apt-get install slurmctld slurmd slurm-client munge)", p)
		}
	}
	if os.Geteuid() != 0 {
		return errors.New("slurmtest: must run as root (SlurmUser=root; munged runs as user munge)")
	}
	if _, err := os.Stat("/etc/munge/munge.key"); err != nil {
		return fmt.Errorf("slurmtest: %w (the munge package creates it)", err)
	}
	return nil
}

// Cluster is a running single-node Slurm.
type Cluster struct {
	// Dir holds slurm.conf, the state, spool and log folders.
	Dir   string
	Conf  string
	ctld  *exec.Cmd
	slrd  *exec.Cmd
	munge *exec.Cmd
	// mungeDir holds the cluster's own munged's socket, PID, log and
	// seed (outside Dir: munged needs every folder above its socket
	// searchable by all, and test folders are private).
	mungeDir string
}

// Start configures a cluster in dir (which must exist) and starts munged
// (unless one runs), slurmctld and slurmd; it returns once the node is
// idle, or an error (with the logs) after timeout.
func Start(dir string, timeout time.Duration) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf")}
	for _, d := range []string{"state", "spool", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	if err := c.startMunge(); err != nil {
		c.Stop()
		return nil, err
	}
	if err := os.WriteFile(c.Conf, []byte(conf(dir, c.mungeSocket(), ports[0], ports[1])), 0o644); err != nil {
		c.Stop()
		return nil, err
	}
	c.ctld = exec.Command("/usr/sbin/slurmctld", "-D", "-i")
	c.slrd = exec.Command("/usr/sbin/slurmd", "-D", "-N", "localhost")
	for _, d := range []struct {
		cmd *exec.Cmd
		log string
	}{{c.ctld, "ctld.out"}, {c.slrd, "slurmd.out"}} {
		f, err := os.Create(filepath.Join(dir, "log", d.log))
		if err != nil {
			c.Stop()
			return nil, err
		}
		d.cmd.Stdout, d.cmd.Stderr, d.cmd.Env = f, f, c.Env()
		if err := d.cmd.Start(); err != nil {
			f.Close()
			c.Stop()
			return nil, fmt.Errorf("slurmtest: %s: %w", d.cmd.Path, err)
		}
		f.Close() // the child holds its own descriptor
	}
	deadline := time.Now().Add(timeout)
	for {
		out, _ := c.Command("sinfo", "-h", "-o", "%T").Output()
		if strings.HasPrefix(strings.TrimSpace(string(out)), "idle") {
			return c, nil
		}
		if time.Now().After(deadline) {
			logs := c.Logs()
			c.Stop()
			return nil, fmt.Errorf("slurmtest: node not idle after %v (sinfo: %q)\n%s", timeout, out, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// conf is slurm.conf for a one-node cluster in dir, authenticating
// through the munged at socket.
func conf(dir, socket string, ctldPort, slurmdPort int) string {
	return fmt.Sprintf(`ClusterName=ci
SlurmctldHost=localhost
SlurmctldPort=%[3]d
SlurmdPort=%[4]d
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=%[2]s
StateSaveLocation=%[1]s/state
SlurmdSpoolDir=%[1]s/spool
SlurmctldPidFile=%[1]s/slurmctld.pid
SlurmdPidFile=%[1]s/slurmd.pid
SlurmctldLogFile=%[1]s/log/slurmctld.log
SlurmdLogFile=%[1]s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=%[1]s/log/jobcomp.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
`, dir, socket, ctldPort, slurmdPort)
}

// freePorts returns n TCP ports free on localhost right now.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// startMunge starts the cluster's own munged (user munge, foreground, a
// child of this process) on a socket of its own, so that clusters of
// tests running side by side neither share nor stop each other's.
func (c *Cluster) startMunge() error {
	u, err := user.Lookup("munge")
	if err != nil {
		return fmt.Errorf("slurmtest: %w (the munge package creates the user)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	base, err := os.MkdirTemp("", "slurmtest-munge-")
	if err != nil {
		return err
	}
	c.mungeDir = base
	d := filepath.Join(base, "m")
	if err := os.Chmod(base, 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(d, 0o755); err != nil {
		return err
	}
	if err := os.Chown(d, uid, gid); err != nil {
		return err
	}
	c.munge = exec.Command("/usr/sbin/munged", "-F", "--socket="+c.mungeSocket(), "--pid-file="+filepath.Join(d, "munged.pid"),
		"--log-file="+filepath.Join(d, "munged.log"), "--seed-file="+filepath.Join(d, "munged.seed"))
	c.munge.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	var errb bytes.Buffer
	c.munge.Stderr = &errb
	if err := c.munge.Start(); err != nil {
		return fmt.Errorf("slurmtest: munged: %w", err)
	}
	for i := 0; ; i++ {
		out, err := exec.Command("bash", "-c", "munge -S \"$1\" -n | unmunge -S \"$1\"", "-", c.mungeSocket()).CombinedOutput()
		if err == nil {
			return nil
		}
		if i == 50 {
			return fmt.Errorf("slurmtest: munge -n | unmunge: %w: %s\nmunged: %s", err, out, errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mungeSocket is the cluster's munged's socket.
func (c *Cluster) mungeSocket() string { return filepath.Join(c.mungeDir, "m", "munge.socket") }

// Env is the environment of a Slurm client of this cluster.
func (c *Cluster) Env() []string { return append(os.Environ(), "SLURM_CONF="+c.Conf) }

// Command returns a command run with the cluster's environment.
func (c *Cluster) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env()
	return cmd
}

// Wait polls squeue until job id has left the queue, or times out.
func (c *Cluster) Wait(id string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		out, err := c.Command("squeue", "-h", "-j", id).Output()
		if err == nil && strings.TrimSpace(string(out)) == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slurmtest: job %s still queued after %v: %s", id, timeout, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// ArrayStates returns the state (COMPLETED, FAILED, ...) of every array
// task of job id, by index. Finished tasks stay visible for MinJobAge
// (300 s by default).
func (c *Cluster) ArrayStates(id string) (map[int]string, error) {
	out, err := c.Command("squeue", "-h", "-t", "all", "-r", "-j", id, "-o", "%K %T").Output()
	if err != nil {
		return nil, fmt.Errorf("slurmtest: squeue: %w", err)
	}
	states := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		k, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("slurmtest: squeue line %q", line)
		}
		states[k] = f[1]
	}
	return states, nil
}

// Logs returns the daemons' logs, for failure messages.
func (c *Cluster) Logs() string {
	var b bytes.Buffer
	for _, f := range []string{"ctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"} {
		data, _ := os.ReadFile(filepath.Join(c.Dir, "log", f))
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", f, data)
	}
	return b.String()
}

// Stop cancels every job, waits for the queue and the job steps to end,
// then stops slurmd, slurmctld and (if this cluster started it) munged,
// each by its PID, waiting for each.
func (c *Cluster) Stop() error {
	var errs []error
	if c.ctld != nil && c.ctld.Process != nil {
		c.Command("scancel", "--user=root").Run()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			out, _ := c.Command("squeue", "-h").Output()
			if strings.TrimSpace(string(out)) == "" {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, cmd := range []*exec.Cmd{c.slrd, c.ctld, c.munge} {
		if cmd == nil || cmd.Process == nil {
			continue
		}
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
			errs = append(errs, fmt.Errorf("slurmtest: %s did not stop on SIGTERM; killed", cmd.Path))
		}
	}
	if c.mungeDir != "" {
		errs = append(errs, os.RemoveAll(c.mungeDir))
	}
	return errors.Join(errs...)
}
