package batch

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/paretonav/paretonav/job"
)

// K8sOptions are the settings of a Kubernetes Indexed Job.
type K8sOptions struct {
	JobsFile string
	OutDir   string
	// Shards completions; Parallelism pods at once (0: Shards).
	Shards      int
	Parallelism int
	Image       string
	// VolumeClaim is mounted at Mount, the pods' working folder, where
	// JobsFile and OutDir (relative, or absolute below Mount) live.
	VolumeClaim string
	Mount       string
	CPU, Memory string
	Name        string
}

// dns1123 is a DNS-1123 label (a Job's name: at most 63 characters);
// dns1123Sub a DNS-1123 subdomain (a claim's name: at most 253).
var (
	dns1123    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Sub = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// The manifest's shape: only the fields written, named as Kubernetes
// names them (batch/v1 Job).
type (
	k8sJob struct {
		APIVersion string     `yaml:"apiVersion"`
		Kind       string     `yaml:"kind"`
		Metadata   k8sMeta    `yaml:"metadata"`
		Spec       k8sJobSpec `yaml:"spec"`
	}
	k8sMeta struct {
		Name   string            `yaml:"name,omitempty"`
		Labels map[string]string `yaml:"labels,omitempty"`
	}
	k8sJobSpec struct {
		CompletionMode       string         `yaml:"completionMode"`
		Completions          int            `yaml:"completions"`
		Parallelism          int            `yaml:"parallelism"`
		BackoffLimitPerIndex int            `yaml:"backoffLimitPerIndex"`
		Template             k8sPodTemplate `yaml:"template"`
	}
	k8sPodTemplate struct {
		Metadata k8sMeta    `yaml:"metadata"`
		Spec     k8sPodSpec `yaml:"spec"`
	}
	k8sPodSpec struct {
		RestartPolicy string         `yaml:"restartPolicy"`
		Containers    []k8sContainer `yaml:"containers"`
		Volumes       []k8sVolume    `yaml:"volumes"`
	}
	k8sContainer struct {
		Name         string        `yaml:"name"`
		Image        string        `yaml:"image"`
		WorkingDir   string        `yaml:"workingDir"`
		Command      []string      `yaml:"command"`
		Args         []string      `yaml:"args"`
		Resources    *k8sResources `yaml:"resources,omitempty"`
		VolumeMounts []k8sVolMount `yaml:"volumeMounts"`
	}
	k8sResources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	}
	k8sVolMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	}
	k8sVolume struct {
		Name                  string      `yaml:"name"`
		PersistentVolumeClaim k8sClaimRef `yaml:"persistentVolumeClaim"`
	}
	k8sClaimRef struct {
		ClaimName string `yaml:"claimName"`
	}
)

// K8sManifest returns the Indexed Job manifest of o (YAML): completion
// index K runs shard K/N, the index from JOB_COMPLETION_INDEX (which
// Kubernetes sets in every pod and expands in args).
func K8sManifest(o K8sOptions) ([]byte, error) {
	if o.Shards < 1 {
		return nil, fmt.Errorf("--shards %d: want at least 1 completion", o.Shards)
	}
	if o.Parallelism == 0 {
		o.Parallelism = o.Shards
	}
	if o.Parallelism < 1 || o.Parallelism > o.Shards {
		return nil, fmt.Errorf("--parallelism %d: want 1 to --shards (%d)", o.Parallelism, o.Shards)
	}
	if o.Image == "" {
		return nil, fmt.Errorf("--image: required (a container image with paretonav on its PATH)")
	}
	if o.VolumeClaim == "" {
		return nil, fmt.Errorf("--volume-claim: required (the pods share the out folder on it)")
	}
	if !dns1123.MatchString(o.Name) || len(o.Name) > 63 {
		return nil, fmt.Errorf("--name %q: want a DNS-1123 label (lower-case letters, digits and '-', at most 63)", o.Name)
	}
	if !dns1123Sub.MatchString(o.VolumeClaim) || len(o.VolumeClaim) > 253 {
		return nil, fmt.Errorf("--volume-claim %q: want a DNS-1123 name", o.VolumeClaim)
	}
	if !path.IsAbs(o.Mount) {
		return nil, fmt.Errorf("--mount %q: want an absolute path in the pod", o.Mount)
	}
	for _, p := range []struct{ flag, path string }{{"JOBS.yaml", o.JobsFile}, {"--out-dir", o.OutDir}} {
		if filepath.IsAbs(p.path) && !strings.HasPrefix(filepath.Clean(p.path)+"/", path.Clean(o.Mount)+"/") {
			return nil, fmt.Errorf("%s %s: not below --mount %s; give it relative to the volume", p.flag, p.path, o.Mount)
		}
	}
	c := k8sContainer{
		Name: "paretonav", Image: o.Image, WorkingDir: o.Mount,
		Command: []string{"paretonav"},
		Args: []string{"batch", "run", filepath.ToSlash(o.JobsFile), "--out-dir", filepath.ToSlash(o.OutDir),
			"--shard", fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", o.Shards)},
		VolumeMounts: []k8sVolMount{{Name: "work", MountPath: o.Mount}},
	}
	if o.CPU != "" || o.Memory != "" {
		r := map[string]string{}
		if o.CPU != "" {
			r["cpu"] = o.CPU
		}
		if o.Memory != "" {
			r["memory"] = o.Memory
		}
		c.Resources = &k8sResources{Requests: r, Limits: r}
	}
	labels := map[string]string{"app.kubernetes.io/name": "paretonav-batch"}
	m := k8sJob{
		APIVersion: "batch/v1", Kind: "Job",
		Metadata: k8sMeta{Name: o.Name, Labels: labels},
		Spec: k8sJobSpec{
			CompletionMode: "Indexed", Completions: o.Shards, Parallelism: o.Parallelism,
			// One retry per index: a preempted pod resumes its jobs from
			// their checkpoints; a shard with a failed job stays failed.
			BackoffLimitPerIndex: 1,
			Template: k8sPodTemplate{Metadata: k8sMeta{Labels: labels}, Spec: k8sPodSpec{
				RestartPolicy: "Never", Containers: []k8sContainer{c},
				Volumes: []k8sVolume{{Name: "work", PersistentVolumeClaim: k8sClaimRef{ClaimName: o.VolumeClaim}}},
			}},
		},
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteK8s writes the out folder's jobs.json and k8s-job.yaml, and
// returns the manifest's path.
func WriteK8s(o K8sOptions, jobs []Job) (string, error) {
	b, err := K8sManifest(o)
	if err != nil {
		return "", err
	}
	if err := WriteManifest(o.OutDir, o.JobsFile, jobs); err != nil {
		return "", err
	}
	p := filepath.Join(o.OutDir, "k8s-job.yaml")
	if err := job.WriteFile(p, b); err != nil {
		return "", fmt.Errorf("--out-dir: %w", err)
	}
	return p, nil
}
