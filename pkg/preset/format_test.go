package preset

import (
	"strings"
	"testing"
)

func TestMalformedIdentity(t *testing.T) {
	ack, _ := Lookup("ack")
	for _, tt := range []struct {
		values map[string]string
		want   string
	}{
		{map[string]string{"arn": "arn:aws:rds:eu-west-1:123456789012:db:orders", "ownerAccountID": "123456789012"}, ""},
		{map[string]string{"arn": "arn:aws:s3:::logs"}, ""},
		{map[string]string{"arn": "arn:aws-us-gov:iam::aws:policy/ReadOnlyAccess"}, ""},
		{map[string]string{"arn": "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/73e2d6bc24d8a067"}, ""},
		{map[string]string{"arn": "arn:aws:rds:eu-west-1:123456789012:db:orders "}, `identity arn is "arn:aws:rds:eu-west-1:123456789012:db:orders ", which is not an ARN`},
		{map[string]string{"arn": "ARN:aws:rds:eu-west-1:123456789012:db:orders"}, "which is not an ARN"},
		{map[string]string{"arn": "arn:aws:rds:eu-west-1:12345678901:db:orders"}, "which is not an ARN"},
		{map[string]string{"arn": "arn:aws:rds:eu-west-1:123456789012:"}, "which is not an ARN"},
		{map[string]string{"arn": "orders"}, "which is not an ARN"},
		{map[string]string{"ownerAccountID": "1234-5678-9012"}, `identity ownerAccountID is "1234-5678-9012", which is not an AWS account ID (12 digits)`},
	} {
		got := strings.Join(ack.MalformedIdentity(tt.values, nil), "; ")
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%v: got %q, want %q", tt.values, got, tt.want)
		}
	}
	// A value the rule's provider does not use is not its concern.
	if got := ack.MalformedIdentity(map[string]string{"ownerAccountID": "x"}, func(name string) bool { return name == "arn" }); len(got) > 0 {
		t.Errorf("an unused value: %v", got)
	}
	// A preset without formats checks nothing.
	cc, _ := Lookup("config-connector")
	if got := cc.MalformedIdentity(map[string]string{"resourceID": "Orders DB "}, nil); len(got) > 0 {
		t.Errorf("config-connector: %v", got)
	}
}
