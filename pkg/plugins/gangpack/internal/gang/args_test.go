package gang

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

func rawArgs(s string) runtime.Object {
	return &runtime.Unknown{Raw: []byte(s), ContentType: runtime.ContentTypeJSON}
}

func i64(v int64) *int64 { return &v }

// qualifiedNameError is the exact error text for an invalid qualified-name argument:
// `{prefix}{first message of validation.IsQualifiedName(value)}`.
func qualifiedNameError(t *testing.T, prefix, value string) string {
	t.Helper()
	msgs := validation.IsQualifiedName(value)
	if len(msgs) == 0 {
		t.Fatalf("test bug: %q is a valid qualified name", value)
	}
	return prefix + msgs[0]
}

func TestDecodeArgsRejections(t *testing.T) {
	const (
		badTopo = `topologyKey "not a label key/" is not a valid node label key: `
		badAnn  = `podGroupTopologyKeyAnnotation "not a key/" is not a valid metadata key: `
		badLbl  = `unsupportedPlacementGroupLabel "not a key/" is not a valid metadata key: `
	)
	cases := []struct {
		name string
		obj  runtime.Object
		// exact error text; when qualified is set, the error must be prefix+IsQualifiedName(qualified)[0]
		want      string
		prefix    string
		qualified string
	}{
		// step 2..4: qualified names (contract §2.1 required rejections)
		{name: "topologyKey not a label key", obj: rawArgs(`{"topologyKey":"not a label key/","gcIntervalSeconds":45}`),
			prefix: badTopo, qualified: "not a label key/"},
		{name: "annotation not a key", obj: rawArgs(`{"podGroupTopologyKeyAnnotation":"not a key/","gcIntervalSeconds":45}`),
			prefix: badAnn, qualified: "not a key/"},
		{name: "label not a key", obj: rawArgs(`{"unsupportedPlacementGroupLabel":"not a key/","gcIntervalSeconds":45}`),
			prefix: badLbl, qualified: "not a key/"},
		{name: "placementGroupLabel not a key", obj: rawArgs(`{"placementGroupLabel":"not a key/","gcIntervalSeconds":45}`),
			prefix: `placementGroupLabel "not a key/" is not a valid metadata key: `, qualified: "not a key/"},
		{name: "placementGroupLabel too long for its annotations",
			obj:       rawArgs(`{"placementGroupLabel":"ome.io/` + strings.Repeat("g", 60) + `","gcIntervalSeconds":45}`),
			prefix:    `placementGroupLabel "ome.io/` + strings.Repeat("g", 60) + `" is too long: annotation "ome.io/` + strings.Repeat("g", 60) + `-topology-key" is not a valid metadata key: `,
			qualified: "ome.io/" + strings.Repeat("g", 60) + "-topology-key"},
		{name: "bindWindowMilliseconds negative", obj: rawArgs(`{"bindWindowMilliseconds":-1,"gcIntervalSeconds":45}`),
			want: "bindWindowMilliseconds must be between 0 and 60000"},
		{name: "bindWindowMilliseconds above a minute", obj: rawArgs(`{"bindWindowMilliseconds":60001,"gcIntervalSeconds":45}`),
			want: "bindWindowMilliseconds must be between 0 and 60000"},
		{name: "placementLabels with an invalid key", obj: rawArgs(`{"placementLabels":["topology.kubernetes.io/rack","not a key/"],"gcIntervalSeconds":45}`),
			prefix: `placementLabels: "not a key/" is not a valid label key: `, qualified: "not a key/"},
		{name: "placementLabels with the pod-group label", obj: rawArgs(`{"placementLabels":["scheduling.x-k8s.io/pod-group"],"gcIntervalSeconds":45}`),
			want: `placementLabels: "scheduling.x-k8s.io/pod-group" cannot be copied from nodes (the pod-group label)`},
		{name: "placementLabels with ome.io/domain", obj: rawArgs(`{"placementLabels":["ome.io/domain"],"gcIntervalSeconds":45}`),
			want: `placementLabels: "ome.io/domain" cannot be copied from nodes (written by the plugin itself)`},
		{name: "placementLabels with the placement group label", obj: rawArgs(`{"placementGroupLabel":"ome.io/placement-group","placementLabels":["ome.io/placement-group"],"gcIntervalSeconds":45}`),
			want: `placementLabels: "ome.io/placement-group" cannot be copied from nodes (placementGroupLabel)`},
		{name: "domainPreferences unknown", obj: rawArgs(`{"domainPreferences":"PodAffinity","gcIntervalSeconds":45}`),
			want: `domainPreferences must be NodeAffinity or None: "PodAffinity"`},
		{name: "placementGroupLabel equals unsupportedPlacementGroupLabel",
			obj:  rawArgs(`{"placementGroupLabel":"ome.io/placement-group","unsupportedPlacementGroupLabel":"ome.io/placement-group","gcIntervalSeconds":45}`),
			want: `placementGroupLabel and unsupportedPlacementGroupLabel must differ: both are "ome.io/placement-group"`},
		{name: "both metadata keys invalid → step 3",
			obj:    rawArgs(`{"podGroupTopologyKeyAnnotation":"not a key/","unsupportedPlacementGroupLabel":"not a key/","gcIntervalSeconds":45}`),
			prefix: badAnn, qualified: "not a key/"},
		{name: "both metadata keys invalid, label listed first → still step 3",
			obj:    rawArgs(`{"unsupportedPlacementGroupLabel":"not a key/","podGroupTopologyKeyAnnotation":"not a key/","gcIntervalSeconds":45}`),
			prefix: badAnn, qualified: "not a key/"},
		{name: "contract example: gpu clique", obj: rawArgs(`{"topologyKey":"gpu clique","gcIntervalSeconds":45}`),
			prefix: `topologyKey "gpu clique" is not a valid node label key: `, qualified: "gpu clique"},
		{name: "topologyKey with empty prefix part", obj: rawArgs(`{"topologyKey":"/domain","gcIntervalSeconds":45}`),
			prefix: `topologyKey "/domain" is not a valid node label key: `, qualified: "/domain"},
		{name: "topologyKey too long", obj: rawArgs(`{"topologyKey":"` + strings.Repeat("a", 64) + `","gcIntervalSeconds":45}`),
			prefix: `topologyKey "` + strings.Repeat("a", 64) + `" is not a valid node label key: `, qualified: strings.Repeat("a", 64)},

		// step 5..7: seconds
		{name: "defaultPermitTimeoutSeconds 0", obj: rawArgs(`{"defaultPermitTimeoutSeconds":0,"gcIntervalSeconds":45}`),
			want: "defaultPermitTimeoutSeconds must be positive"},
		{name: "defaultPermitTimeoutSeconds -1", obj: rawArgs(`{"defaultPermitTimeoutSeconds":-1,"gcIntervalSeconds":45}`),
			want: "defaultPermitTimeoutSeconds must be positive"},
		{name: "defaultPermitTimeoutSeconds too large", obj: rawArgs(`{"defaultPermitTimeoutSeconds":9223372037,"gcIntervalSeconds":45}`),
			want: "defaultPermitTimeoutSeconds is too large"},
		{name: "podGroupSyncTimeoutSeconds 0", obj: rawArgs(`{"podGroupSyncTimeoutSeconds":0,"gcIntervalSeconds":45}`),
			want: "podGroupSyncTimeoutSeconds must be positive"},
		{name: "podGroupSyncTimeoutSeconds -5", obj: rawArgs(`{"podGroupSyncTimeoutSeconds":-5,"gcIntervalSeconds":45}`),
			want: "podGroupSyncTimeoutSeconds must be positive"},
		{name: "podGroupSyncTimeoutSeconds too large", obj: rawArgs(`{"podGroupSyncTimeoutSeconds":9223372037,"gcIntervalSeconds":45}`),
			want: "podGroupSyncTimeoutSeconds is too large"},
		{name: "gcIntervalSeconds 0", obj: rawArgs(`{"gcIntervalSeconds":0}`),
			want: "gcIntervalSeconds must be positive"},
		{name: "gcIntervalSeconds -1", obj: rawArgs(`{"gcIntervalSeconds":-1}`),
			want: "gcIntervalSeconds must be positive"},
		{name: "gcIntervalSeconds too large", obj: rawArgs(`{"gcIntervalSeconds":9223372037}`),
			want: "gcIntervalSeconds is too large"},
		{name: "gcIntervalSeconds max int64", obj: rawArgs(`{"gcIntervalSeconds":9223372036854775807}`),
			want: "gcIntervalSeconds is too large"},
		{name: "gcIntervalSeconds misspelled", obj: rawArgs(`{"gcIntervlSeconds":45}`),
			want: `decode OMEGangPack args: unknown field "gcIntervlSeconds" (valid fields: ` + strings.Join(ArgsFields(), ", ") + ")"},
		{name: "empty object", obj: rawArgs(`{}`),
			want: "gcIntervalSeconds must be configured"},
		{name: "nil args", obj: nil,
			want: "gcIntervalSeconds must be configured"},
		{name: "unknown with nil Raw", obj: &runtime.Unknown{ContentType: runtime.ContentTypeJSON},
			want: "gcIntervalSeconds must be configured"},
		{name: "JSON null", obj: rawArgs(`null`),
			want: "gcIntervalSeconds must be configured"},
		{name: "explicit null gcIntervalSeconds", obj: rawArgs(`{"gcIntervalSeconds":null}`),
			want: "gcIntervalSeconds must be configured"},
		{name: "other fields valid, gc missing", obj: rawArgs(`{"topologyKey":"topology.ome.io/domain","defaultPermitTimeoutSeconds":90,"podGroupSyncTimeoutSeconds":15}`),
			want: "gcIntervalSeconds must be configured"},

		// fixed order: the first failing step wins
		{name: "order: topologyKey before annotation", obj: rawArgs(`{"topologyKey":"not a label key/","podGroupTopologyKeyAnnotation":"not a key/","gcIntervalSeconds":45}`),
			prefix: badTopo, qualified: "not a label key/"},
		{name: "order: topologyKey before missing gc", obj: rawArgs(`{"topologyKey":"not a label key/"}`),
			prefix: badTopo, qualified: "not a label key/"},
		{name: "order: label before seconds", obj: rawArgs(`{"unsupportedPlacementGroupLabel":"not a key/","defaultPermitTimeoutSeconds":0,"podGroupSyncTimeoutSeconds":0,"gcIntervalSeconds":0}`),
			prefix: badLbl, qualified: "not a key/"},
		{name: "order: defaultPermit before podGroupSync and gc", obj: rawArgs(`{"gcIntervalSeconds":0,"podGroupSyncTimeoutSeconds":0,"defaultPermitTimeoutSeconds":0}`),
			want: "defaultPermitTimeoutSeconds must be positive"},
		{name: "order: podGroupSync before gc", obj: rawArgs(`{"podGroupSyncTimeoutSeconds":9223372037}`),
			want: "podGroupSyncTimeoutSeconds is too large"},
		{name: "order: defaultPermit too large before missing gc", obj: rawArgs(`{"defaultPermitTimeoutSeconds":9223372037}`),
			want: "defaultPermitTimeoutSeconds is too large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, err := DecodeArgs(tc.obj)
			if err == nil {
				t.Fatalf("DecodeArgs accepted %+v", args)
			}
			if args != nil {
				t.Errorf("DecodeArgs returned args %+v with error", args)
			}
			want := tc.want
			if tc.prefix != "" {
				want = qualifiedNameError(t, tc.prefix, tc.qualified)
				if !strings.HasPrefix(err.Error(), tc.prefix) {
					t.Fatalf("error %q lacks prefix %q", err, tc.prefix)
				}
				if rest := strings.TrimPrefix(err.Error(), tc.prefix); rest != validation.IsQualifiedName(tc.qualified)[0] {
					t.Fatalf("error detail %q, want first IsQualifiedName message %q", rest, validation.IsQualifiedName(tc.qualified)[0])
				}
			}
			if err.Error() != want {
				t.Fatalf("error %q, want %q", err, want)
			}
		})
	}
}

func TestDecodeArgsDecodeErrors(t *testing.T) {
	const prefix = "decode OMEGangPack args: "
	cases := []struct {
		name string
		obj  runtime.Object
	}{
		{"truncated JSON", rawArgs(`{"gcIntervalSeconds":`)},
		{"not JSON", rawArgs(`gcIntervalSeconds: 45`)},
		{"empty raw bytes", &runtime.Unknown{Raw: []byte{}, ContentType: runtime.ContentTypeJSON}},
		{"string for an integer", rawArgs(`{"gcIntervalSeconds":"45"}`)},
		{"fraction for an integer", rawArgs(`{"gcIntervalSeconds":45.5}`)},
		{"integer overflow", rawArgs(`{"gcIntervalSeconds":9223372036854775808}`)},
		{"number for a string", rawArgs(`{"topologyKey":5,"gcIntervalSeconds":45}`)},
		{"string for a bool", rawArgs(`{"standaloneDomainPacking":"yes","gcIntervalSeconds":45}`)},
		{"number for gangSoftSpread", rawArgs(`{"gangSoftSpread":1,"gcIntervalSeconds":45}`)},
		{"array", rawArgs(`[]`)},
		// a decode error wins over everything after it, even an invalid key
		{"decode before validation", rawArgs(`{"topologyKey":"not a label key/","gcIntervalSeconds":"x"}`)},
		{"unsupported content type", &runtime.Unknown{Raw: []byte(`{"gcIntervalSeconds":45}`), ContentType: "application/vnd.kubernetes.protobuf"}},
		{"not a runtime.Unknown", &metav1.Status{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, err := DecodeArgs(tc.obj)
			if err == nil {
				t.Fatalf("DecodeArgs accepted %+v", args)
			}
			if !strings.HasPrefix(err.Error(), prefix) || len(err.Error()) == len(prefix) {
				t.Fatalf("error %q, want %q + cause", err, prefix)
			}
			if args != nil {
				t.Errorf("args %+v returned with error", args)
			}
		})
	}
}

func TestDecodeArgsAcceptance(t *testing.T) {
	f, tr := false, true
	cases := []struct {
		name string
		obj  runtime.Object
		want Args
		pack bool
	}{
		{
			name: "contract required acceptance",
			obj: rawArgs(`{"topologyKey":"topology.ome.io/domain",` +
				`"podGroupTopologyKeyAnnotation":"workloads.example/topology-key",` +
				`"unsupportedPlacementGroupLabel":"workloads.example/placement-group",` +
				`"defaultPermitTimeoutSeconds":90,"podGroupSyncTimeoutSeconds":15,"gcIntervalSeconds":45}`),
			want: Args{TopologyKey: "topology.ome.io/domain", PodGroupTopologyKeyAnnotation: "workloads.example/topology-key",
				UnsupportedPlacementGroupLabel: "workloads.example/placement-group",
				DefaultPermitTimeoutSeconds:    i64(90), PodGroupSyncTimeoutSeconds: i64(15), GCIntervalSeconds: i64(45)},
			pack: true,
		},
		{
			name: "chart defaults",
			obj: rawArgs(`{"podGroupTopologyKeyAnnotation":"ome.io/topology-key","unsupportedPlacementGroupLabel":"ome.io/placement-group",` +
				`"defaultPermitTimeoutSeconds":600,"podGroupSyncTimeoutSeconds":30,"gcIntervalSeconds":60,"standaloneDomainPacking":true,"gangSoftSpread":true}`),
			want: Args{PodGroupTopologyKeyAnnotation: "ome.io/topology-key", UnsupportedPlacementGroupLabel: "ome.io/placement-group",
				DefaultPermitTimeoutSeconds: i64(600), PodGroupSyncTimeoutSeconds: i64(30), GCIntervalSeconds: i64(60), StandaloneDomainPacking: &tr,
				GangSoftSpread: &tr},
			pack: true,
		},
		{
			name: "new chart defaults: partner groups on, the fail-closed label off",
			obj: rawArgs(`{"podGroupTopologyKeyAnnotation":"ome.io/topology-key","unsupportedPlacementGroupLabel":"","placementGroupLabel":"ome.io/placement-group",` +
				`"defaultPermitTimeoutSeconds":600,"podGroupSyncTimeoutSeconds":30,"gcIntervalSeconds":60}`),
			want: Args{PodGroupTopologyKeyAnnotation: "ome.io/topology-key", PlacementGroupLabel: "ome.io/placement-group",
				DefaultPermitTimeoutSeconds: i64(600), PodGroupSyncTimeoutSeconds: i64(30), GCIntervalSeconds: i64(60)},
			pack: true,
		},
		{
			name: "only the required field; optional ones unset, packing defaults to true",
			obj:  rawArgs(`{"gcIntervalSeconds":45}`),
			want: Args{GCIntervalSeconds: i64(45)},
			pack: true,
		},
		{
			name: "empty strings are accepted (no fallback / disabled)",
			obj:  rawArgs(`{"topologyKey":"","podGroupTopologyKeyAnnotation":"","unsupportedPlacementGroupLabel":"","gcIntervalSeconds":45}`),
			want: Args{GCIntervalSeconds: i64(45)},
			pack: true,
		},
		{
			name: "packing disabled",
			obj:  rawArgs(`{"gcIntervalSeconds":45,"standaloneDomainPacking":false}`),
			want: Args{GCIntervalSeconds: i64(45), StandaloneDomainPacking: &f},
			pack: false,
		},
		{
			name: "upper bound 9223372036 accepted everywhere",
			obj:  rawArgs(`{"defaultPermitTimeoutSeconds":9223372036,"podGroupSyncTimeoutSeconds":9223372036,"gcIntervalSeconds":9223372036}`),
			want: Args{DefaultPermitTimeoutSeconds: i64(9223372036), PodGroupSyncTimeoutSeconds: i64(9223372036), GCIntervalSeconds: i64(9223372036)},
			pack: true,
		},
		{
			name: "lower bound 1 accepted everywhere",
			obj:  rawArgs(`{"defaultPermitTimeoutSeconds":1,"podGroupSyncTimeoutSeconds":1,"gcIntervalSeconds":1}`),
			want: Args{DefaultPermitTimeoutSeconds: i64(1), PodGroupSyncTimeoutSeconds: i64(1), GCIntervalSeconds: i64(1)},
			pack: true,
		},
		{
			name: "unqualified names are valid keys",
			obj:  rawArgs(`{"topologyKey":"rack","podGroupTopologyKeyAnnotation":"topology-key","unsupportedPlacementGroupLabel":"placement_group","gcIntervalSeconds":45}`),
			want: Args{TopologyKey: "rack", PodGroupTopologyKeyAnnotation: "topology-key", UnsupportedPlacementGroupLabel: "placement_group", GCIntervalSeconds: i64(45)},
			pack: true,
		},
		{
			name: "empty content type means JSON",
			obj:  &runtime.Unknown{Raw: []byte(`{"gcIntervalSeconds":45}`)},
			want: Args{GCIntervalSeconds: i64(45)},
			pack: true,
		},
		{
			name: "YAML content type",
			obj:  &runtime.Unknown{Raw: []byte("gcIntervalSeconds: 45\ntopologyKey: topology.ome.io/domain\n"), ContentType: runtime.ContentTypeYAML},
			want: Args{TopologyKey: "topology.ome.io/domain", GCIntervalSeconds: i64(45)},
			pack: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, err := DecodeArgs(tc.obj)
			if err != nil {
				t.Fatalf("DecodeArgs: %v", err)
			}
			if !equalArgs(*args, tc.want) {
				t.Fatalf("args = %s, want %s", dumpArgs(*args), dumpArgs(tc.want))
			}
			if args.PackStandalone() != tc.pack {
				t.Fatalf("PackStandalone = %v, want %v", args.PackStandalone(), tc.pack)
			}
			if err := ValidateArgs(args); err != nil {
				t.Fatalf("accepted args do not re-validate: %v", err)
			}
		})
	}
}

func TestValidateArgs(t *testing.T) {
	cases := []struct {
		name string
		args Args
		want string // "" = valid
	}{
		{"zero value", Args{}, "gcIntervalSeconds must be configured"},
		{"minimal", Args{GCIntervalSeconds: i64(45)}, ""},
		{"gc 0", Args{GCIntervalSeconds: i64(0)}, "gcIntervalSeconds must be positive"},
		{"gc max", Args{GCIntervalSeconds: i64(9223372036)}, ""},
		{"gc max+1", Args{GCIntervalSeconds: i64(9223372037)}, "gcIntervalSeconds is too large"},
		{"gc min int64", Args{GCIntervalSeconds: i64(-9223372036854775808)}, "gcIntervalSeconds must be positive"},
		{"permit -1", Args{DefaultPermitTimeoutSeconds: i64(-1), GCIntervalSeconds: i64(45)}, "defaultPermitTimeoutSeconds must be positive"},
		{"sync 0", Args{PodGroupSyncTimeoutSeconds: i64(0), GCIntervalSeconds: i64(45)}, "podGroupSyncTimeoutSeconds must be positive"},
		{"packing set", Args{GCIntervalSeconds: i64(45), StandaloneDomainPacking: new(bool)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateArgs(&tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("ValidateArgs: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("ValidateArgs = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestArgsGangSoftSpread(t *testing.T) {
	cases := []struct {
		raw  string
		want bool
	}{
		{`{"gcIntervalSeconds":45}`, true},
		{`{"gcIntervalSeconds":45,"gangSoftSpread":true}`, true},
		{`{"gcIntervalSeconds":45,"gangSoftSpread":false}`, false},
		{`{"gcIntervalSeconds":45,"gangSoftSpread":null}`, true},
	}
	for _, tc := range cases {
		args, err := DecodeArgs(rawArgs(tc.raw))
		if err != nil {
			t.Fatalf("%s: %v", tc.raw, err)
		}
		if args.SoftSpread() != tc.want {
			t.Fatalf("%s: SoftSpread = %v, want %v", tc.raw, args.SoftSpread(), tc.want)
		}
		if !args.PackStandalone() {
			t.Fatalf("%s: gangSoftSpread changed PackStandalone", tc.raw)
		}
	}
}

func TestArgsPackStandaloneDefault(t *testing.T) {
	f, tr := false, true
	if !(&Args{}).PackStandalone() {
		t.Fatal("unset standaloneDomainPacking must default to true")
	}
	if !(&Args{StandaloneDomainPacking: &tr}).PackStandalone() {
		t.Fatal("true → true")
	}
	if (&Args{StandaloneDomainPacking: &f}).PackStandalone() {
		t.Fatal("false → false")
	}
}

func equalArgs(a, b Args) bool {
	eqI := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqB := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.TopologyKey == b.TopologyKey &&
		a.PodGroupTopologyKeyAnnotation == b.PodGroupTopologyKeyAnnotation &&
		a.UnsupportedPlacementGroupLabel == b.UnsupportedPlacementGroupLabel &&
		eqI(a.DefaultPermitTimeoutSeconds, b.DefaultPermitTimeoutSeconds) &&
		eqI(a.PodGroupSyncTimeoutSeconds, b.PodGroupSyncTimeoutSeconds) &&
		eqI(a.GCIntervalSeconds, b.GCIntervalSeconds) &&
		eqB(a.StandaloneDomainPacking, b.StandaloneDomainPacking) &&
		eqB(a.GangSoftSpread, b.GangSoftSpread)
}

func dumpArgs(a Args) string {
	pi := func(p *int64) string {
		if p == nil {
			return "nil"
		}
		return strconv.FormatInt(*p, 10)
	}
	pb := func(p *bool) string {
		if p == nil {
			return "nil"
		}
		return strconv.FormatBool(*p)
	}
	return fmt.Sprintf("{topologyKey:%q annotation:%q label:%q permit:%s sync:%s gc:%s pack:%s softSpread:%s}",
		a.TopologyKey, a.PodGroupTopologyKeyAnnotation, a.UnsupportedPlacementGroupLabel,
		pi(a.DefaultPermitTimeoutSeconds), pi(a.PodGroupSyncTimeoutSeconds), pi(a.GCIntervalSeconds),
		pb(a.StandaloneDomainPacking), pb(a.GangSoftSpread))
}

// FuzzDecodeArgs: arbitrary bytes as Raw never panic; anything accepted re-validates and has
// gcIntervalSeconds set within [1, 9223372036], the other seconds unset or within range, and
// valid (or empty) keys. Every error is either a decode error or one of the validation texts.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"gcIntervalSeconds":45}`, `{"gcIntervlSeconds":45}`,
		`{"gcIntervalSeconds":0}`, `{"gcIntervalSeconds":9223372036}`, `{"gcIntervalSeconds":9223372037}`,
		`{"topologyKey":"not a label key/","gcIntervalSeconds":45}`,
		`{"podGroupTopologyKeyAnnotation":"not a key/","unsupportedPlacementGroupLabel":"not a key/","gcIntervalSeconds":45}`,
		`{"topologyKey":"topology.ome.io/domain","podGroupTopologyKeyAnnotation":"workloads.example/topology-key","unsupportedPlacementGroupLabel":"workloads.example/placement-group","defaultPermitTimeoutSeconds":90,"podGroupSyncTimeoutSeconds":15,"gcIntervalSeconds":45}`,
		`{"defaultPermitTimeoutSeconds":-1,"gcIntervalSeconds":45}`, `{"standaloneDomainPacking":false,"gcIntervalSeconds":1}`,
		`{"GCINTERVALSECONDS":45}`, `{"gcIntervalSeconds":45,"gcIntervalSeconds":0}`, `{"gcIntervalSeconds":1e3}`,
	} {
		f.Add([]byte(s))
	}
	validTexts := map[string]bool{
		"defaultPermitTimeoutSeconds must be positive": true, "defaultPermitTimeoutSeconds is too large": true,
		"podGroupSyncTimeoutSeconds must be positive": true, "podGroupSyncTimeoutSeconds is too large": true,
		"gcIntervalSeconds must be configured": true, "gcIntervalSeconds must be positive": true, "gcIntervalSeconds is too large": true,
	}
	keyPrefixes := []string{`topologyKey "`, `podGroupTopologyKeyAnnotation "`, `unsupportedPlacementGroupLabel "`}
	inRange := func(p *int64) bool { return p == nil || (*p >= 1 && *p <= 9223372036) }
	validKey := func(s string) bool { return s == "" || len(validation.IsQualifiedName(s)) == 0 }
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, err := DecodeArgs(&runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON})
		if err != nil {
			if args != nil {
				t.Fatalf("args %+v returned with error %v", args, err)
			}
			msg := err.Error()
			if strings.HasPrefix(msg, "decode OMEGangPack args: ") || validTexts[msg] {
				return
			}
			for _, p := range keyPrefixes {
				if strings.HasPrefix(msg, p) {
					return
				}
			}
			t.Fatalf("unexpected error text %q", msg)
		}
		if args == nil {
			t.Fatal("nil args without error")
		}
		if err := ValidateArgs(args); err != nil {
			t.Fatalf("accepted args do not re-validate: %v", err)
		}
		if args.GCIntervalSeconds == nil || !inRange(args.GCIntervalSeconds) {
			t.Fatalf("accepted gcIntervalSeconds %v", args.GCIntervalSeconds)
		}
		if !inRange(args.DefaultPermitTimeoutSeconds) || !inRange(args.PodGroupSyncTimeoutSeconds) {
			t.Fatalf("accepted out-of-range seconds: %s", dumpArgs(*args))
		}
		if !validKey(args.TopologyKey) || !validKey(args.PodGroupTopologyKeyAnnotation) || !validKey(args.UnsupportedPlacementGroupLabel) {
			t.Fatalf("accepted invalid key: %s", dumpArgs(*args))
		}
	})
}

// The bind window: unset is the default, 0 is off, anything else is milliseconds.
func TestBindWindow(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want time.Duration
	}{
		{`{"gcIntervalSeconds":45}`, DefaultBindWindow},
		{`{"gcIntervalSeconds":45,"bindWindowMilliseconds":0}`, 0},
		{`{"gcIntervalSeconds":45,"bindWindowMilliseconds":250}`, 250 * time.Millisecond},
		{`{"gcIntervalSeconds":45,"bindWindowMilliseconds":60000}`, time.Minute},
	} {
		a, err := DecodeArgs(rawArgs(tc.raw))
		if err != nil {
			t.Fatalf("%s: %v", tc.raw, err)
		}
		if got := a.BindWindow(); got != tc.want {
			t.Errorf("%s: BindWindow() = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

// TestDecodeArgsStrict: a misspelt, wrongly cased, unknown or repeated key fails the decode,
// naming the key and the valid ones, in JSON and YAML alike.
func TestDecodeArgsStrict(t *testing.T) {
	valid := "(valid fields: " + strings.Join(ArgsFields(), ", ") + ")"
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want string
	}{
		{"misspelt optional key", rawArgs(`{"gcIntervalSeconds":45,"topologyKye":"rack"}`), `unknown field "topologyKye"`},
		{"misspelt required key", rawArgs(`{"gcIntervlSeconds":45}`), `unknown field "gcIntervlSeconds"`},
		{"wrong case", rawArgs(`{"gcIntervalSeconds":45,"TopologyKey":"rack"}`), `unknown field "TopologyKey"`},
		{"two unknown keys", rawArgs(`{"gcIntervalSeconds":45,"a":1,"b":{"x":[1]}}`), `unknown field "a", unknown field "b"`},
		{"repeated key", rawArgs(`{"gcIntervalSeconds":45,"gcIntervalSeconds":46}`), `duplicate field "gcIntervalSeconds"`},
		{"YAML misspelt key", &runtime.Unknown{Raw: []byte("gcIntervalSeconds: 45\npreemtion: true\n"), ContentType: runtime.ContentTypeYAML}, `unknown field "preemtion"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, err := DecodeArgs(tc.obj)
			if err == nil {
				t.Fatalf("DecodeArgs accepted %+v", args)
			}
			if want := "decode OMEGangPack args: " + tc.want + " " + valid; err.Error() != want {
				t.Fatalf("error %q\nwant  %q", err, want)
			}
		})
	}
	if f := ArgsFields(); len(f) != reflect.TypeFor[Args]().NumField() || f[0] != "allowedTopologyKeys" {
		t.Errorf("ArgsFields() = %v: want every field of Args, sorted", f)
	}
}
