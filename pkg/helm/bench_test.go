package helm

import (
	"context"
	"fmt"
	"testing"

	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// BenchmarkResyncOfAnUnchangedRelease measures InstallOrUpgrade on a release that needs nothing:
// one HEAD to resolve the tag and one LIST of the release Secrets.
func BenchmarkResyncOfAnUnchangedRelease(b *testing.B) {
	ctx := context.Background()
	helloChart("0.1.0").push(b, "bench")
	e := &Engine{ChartCache: b.TempDir()}
	rel := Release{Name: "bench", Namespace: "default", Values: map[string]any{"greeting": "bench"},
		Chart: ChartRef{RepoURL: "oci://" + ociHost + "/bench/hello", Version: "0.1.0"}, Registry: registryconn.Config{PlainHTTP: true}}
	if _, err := e.InstallOrUpgrade(ctx, cluster, rel); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Uninstall(ctx, cluster, "bench", "default") })
	before := writes.Load()
	b.ResetTimer()
	for b.Loop() {
		res, err := e.InstallOrUpgrade(ctx, cluster, rel)
		if err != nil || res.Action != ActionUnchanged {
			b.Fatal(res, err)
		}
	}
	b.StopTimer()
	if w := writes.Load() - before; w != 0 {
		b.Fatalf("%d writes on unchanged resyncs", w)
	}
}

// BenchmarkInstallOfACachedChart measures a first install of a chart already in the cache.
func BenchmarkInstallOfACachedChart(b *testing.B) {
	ctx := context.Background()
	helloChart("0.1.0").push(b, "benchinstall")
	e := &Engine{ChartCache: b.TempDir()}
	i := 0
	for b.Loop() {
		i++
		name := fmt.Sprintf("install-%d", i)
		_, err := e.InstallOrUpgrade(ctx, cluster, Release{Name: name, Namespace: "default",
			Chart: ChartRef{RepoURL: "oci://" + ociHost + "/benchinstall/hello", Version: "0.1.0"}, Registry: registryconn.Config{PlainHTTP: true}})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := e.Uninstall(ctx, cluster, name, "default"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
