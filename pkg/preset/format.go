package preset

import (
	"fmt"
	"regexp"
	"slices"
)

// A format is what an identity value must be, as it is: checked before any provider is
// asked, so that a value no resource can have ("arn:aws:rds:...:db:orders " with a
// space, "ARN:..." upper-cased, a placeholder of some other program) is Unknown instead
// of a 404 read as Gone. Only forms that are specified and stable are checked; every
// other value is checked where it lands (an http path segment, a kubernetes name, an
// argument).
type format struct {
	// what names the form, for evidence.
	what string
	re   *regexp.Regexp
}

var (
	// arnFormat is an Amazon Resource Name, as AWS documents it ("Amazon Resource Names
	// (ARNs)", IAM User Guide): arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE. The
	// partition is aws or aws-SOMETHING (aws-cn, aws-us-gov, aws-iso-b, ...); the region
	// and the account may be empty (IAM, S3), the account is 12 digits or "aws" (AWS's own
	// managed policies); the resource is not empty and holds no white space or control
	// character (it may hold ':' and '/').
	arnFormat = format{"an ARN (arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE)",
		regexp.MustCompile(`^arn:aws(-[a-z]+)*:[a-z0-9-]+:[a-z0-9-]*:(\d{12}|aws)?:[^\p{Z}\p{Cc}]+$`)}
	// accountIDFormat is an AWS account ID: 12 digits.
	accountIDFormat = format{"an AWS account ID (12 digits)", regexp.MustCompile(`^\d{12}$`)}
)

// formats are, by preset and identity value, the forms its values must have.
var formats = map[string]map[string]format{
	"ack":                {"arn": arnFormat, "ownerAccountID": accountIDFormat},
	"crossplane-managed": {"arn": arnFormat},
	"aws-load-balancer":  {"targetGroupARN": arnFormat},
}

// MalformedIdentity says, for each identity value in values that used selects (nil
// selects every one) and whose form the preset knows, why it is not of that form, as it
// is (never trimmed or lower-cased). Empty when every such value is.
func (p *Preset) MalformedIdentity(values map[string]string, used func(name string) bool) []string {
	var out []string
	for name, f := range formats[p.Name] {
		v, ok := values[name]
		if !ok || (used != nil && !used(name)) || f.re.MatchString(v) {
			continue
		}
		out = append(out, fmt.Sprintf("identity %s is %q, which is not %s", name, v, f.what))
	}
	slices.Sort(out)
	return out
}
