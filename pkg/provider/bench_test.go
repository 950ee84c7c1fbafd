package provider

import "testing"

// BenchmarkRender renders a provider's request from an object: an http URL with a path
// segment and a query value, and an exec argument.
func BenchmarkRender(b *testing.B) {
	u, err := parseURLTemplate("https://api.example.com/v1/instances/{.status.instanceID}?region={.metadata.namespace}&name={.metadata.annotations.crossplane\\.io/external-name}")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("url", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := u.Render(object, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	arg, err := ParseTemplate("--instance={.status.instanceID}")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("exec-argument", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := arg.renderAll(object, nil, argument(false, false, false)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
