package batch

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// decodeJob decodes a manifest strictly with Kubernetes' own types: an
// unknown or misspelt field is an error.
func decodeJob(t *testing.T, manifest []byte) (*batchv1.Job, error) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := batchv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	obj, _, err := dec.Decode(manifest, nil, nil)
	if err != nil {
		return nil, err
	}
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return nil, fmt.Errorf("decoded a %T, want a batch/v1 Job", obj)
	}
	return j, nil
}

func TestK8sManifestDecodesStrictly(t *testing.T) {
	dns := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	for _, o := range []K8sOptions{
		{JobsFile: "jobs.yaml", OutDir: "runs/b1", Shards: 4, Image: "registry.example/paretonav:0.1", VolumeClaim: "work", Mount: "/data", Name: "paretonav-batch"},
		{JobsFile: "/data/jobs.yaml", OutDir: "/data/out", Shards: 10, Parallelism: 3, Image: "pn", VolumeClaim: "shared.claim",
			Mount: "/data", CPU: "2", Memory: "8Gi", Name: "sweep-7"},
	} {
		b, err := K8sManifest(o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		j, err := decodeJob(t, b)
		if err != nil {
			t.Fatalf("%+v: strict decode: %v\n%s", o, err, b)
		}
		s := j.Spec
		par := o.Parallelism
		if par == 0 {
			par = o.Shards
		}
		switch {
		case s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion:
			t.Errorf("completionMode %v, want Indexed", s.CompletionMode)
		case s.Completions == nil || int(*s.Completions) != o.Shards:
			t.Errorf("completions %v, want %d", s.Completions, o.Shards)
		case s.Parallelism == nil || int(*s.Parallelism) != par || *s.Parallelism > *s.Completions:
			t.Errorf("parallelism %v, want %d ≤ completions", s.Parallelism, par)
		}
		if rp := s.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure {
			t.Errorf("restartPolicy %q, want Never or OnFailure", rp)
		}
		if !dns.MatchString(j.Name) || len(j.Name) > 63 {
			t.Errorf("name %q is not a DNS-1123 label", j.Name)
		}
		cs := s.Template.Spec.Containers
		if len(cs) != 1 {
			t.Fatalf("%d containers, want 1", len(cs))
		}
		c := cs[0]
		args := strings.Join(c.Args, " ")
		want := fmt.Sprintf("batch run %s --out-dir %s --shard $(JOB_COMPLETION_INDEX)/%d", o.JobsFile, o.OutDir, o.Shards)
		if args != want || c.Image != o.Image || c.WorkingDir != o.Mount {
			t.Errorf("container args %q image %q dir %q; want %q, %q, %q", args, c.Image, c.WorkingDir, want, o.Image, o.Mount)
		}
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != o.Mount || len(s.Template.Spec.Volumes) != 1 ||
			s.Template.Spec.Volumes[0].PersistentVolumeClaim == nil || s.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != o.VolumeClaim ||
			c.VolumeMounts[0].Name != s.Template.Spec.Volumes[0].Name {
			t.Errorf("volume: mounts %+v, volumes %+v; want claim %s at %s", c.VolumeMounts, s.Template.Spec.Volumes, o.VolumeClaim, o.Mount)
		}
		if o.Memory != "" {
			if q := c.Resources.Limits[corev1.ResourceMemory]; q.String() != o.Memory {
				t.Errorf("memory limit %s, want %s", q.String(), o.Memory)
			}
			if q := c.Resources.Requests[corev1.ResourceCPU]; q.String() != o.CPU {
				t.Errorf("cpu request %s, want %s", q.String(), o.CPU)
			}
		}
	}
}

// TestStrictDecoderRejects makes sure the decoder of the test above
// would catch a misspelt field (so its passing means something).
func TestStrictDecoderRejects(t *testing.T) {
	b, err := K8sManifest(K8sOptions{JobsFile: "j.yaml", OutDir: "o", Shards: 2, Image: "i", VolumeClaim: "c", Mount: "/data", Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), "restartPolicy:", "restartpolicy:", 1)
	if bad == string(b) {
		t.Fatal("no restartPolicy in the manifest")
	}
	if _, err := decodeJob(t, []byte(bad)); err == nil {
		t.Error("strict decoding accepted restartpolicy")
	}
}

func TestK8sManifestErrors(t *testing.T) {
	ok := K8sOptions{JobsFile: "j.yaml", OutDir: "o", Shards: 2, Image: "i", VolumeClaim: "c", Mount: "/data", Name: "n"}
	for _, tc := range []struct {
		edit func(*K8sOptions)
		want string
	}{
		{func(o *K8sOptions) { o.Shards = 0 }, "--shards 0"},
		{func(o *K8sOptions) { o.Parallelism = 3 }, "--parallelism 3"},
		{func(o *K8sOptions) { o.Image = "" }, "--image"},
		{func(o *K8sOptions) { o.VolumeClaim = "" }, "--volume-claim"},
		{func(o *K8sOptions) { o.Name = "Batch_1" }, `--name "Batch_1"`},
		{func(o *K8sOptions) { o.Mount = "data" }, "--mount"},
		{func(o *K8sOptions) { o.OutDir = "/elsewhere/out" }, "--out-dir /elsewhere/out: not below --mount"},
	} {
		o := ok
		tc.edit(&o)
		if _, err := K8sManifest(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", o, err, tc.want)
		}
	}
}
