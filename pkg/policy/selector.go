package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubectl-finalize/kubectl-finalize/pkg/glob"
)

// contradiction says why no object's labels can meet every requirement of sel ("no value
// of label team meets team=data and team=web at once"), or "" when some labels meet
// them all. It is decided from the parsed requirements, one label key at a time (each
// requirement names one key): a key's requirements hold together exactly when one of a
// few candidate values of that label does meet them all, each asked of the requirement
// itself (labels.Requirement.Matches). The candidates are the label absent, every value
// a requirement names, one value none names, and the least number Gt and Lt leave, in a
// spelling none names ("07" for 7): any other value behaves as one of them.
func contradiction(sel labels.Selector) string {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return "it selects nothing"
	}
	byKey := map[string][]labels.Requirement{}
	var keys []string
	for _, r := range reqs {
		if _, seen := byKey[r.Key()]; !seen {
			keys = append(keys, r.Key())
		}
		byKey[r.Key()] = append(byKey[r.Key()], r)
	}
	for _, k := range keys {
		if satisfiable(k, byKey[k]) {
			continue
		}
		var said []string
		for _, r := range byKey[k] {
			said = append(said, r.String())
		}
		if len(said) == 1 {
			return fmt.Sprintf("no value of label %s meets %s", k, said[0])
		}
		return fmt.Sprintf("no value of label %s meets %s at once", k, strings.Join(said, " and "))
	}
	return ""
}

// satisfiable reports whether some value of label key, or its absence, meets every
// requirement of reqs, all of which are about key.
func satisfiable(key string, reqs []labels.Requirement) bool {
	for _, set := range candidateSets(key, reqs) {
		if meetsAll(reqs, set) {
			return true
		}
	}
	return false
}

// candidateSets are the label sets that stand for every value of label key, as far as
// reqs and also (all about key) can tell them apart: the label absent, each value they
// name, a value none names (not a number), and the least number reqs' bounds leave.
func candidateSets(key string, reqs []labels.Requirement, also ...labels.Requirement) []labels.Set {
	named := map[string]bool{}
	sets := []labels.Set{{}} // the label absent
	for _, r := range append(append([]labels.Requirement{}, reqs...), also...) {
		for _, v := range r.ValuesUnsorted() {
			if !named[v] {
				named[v] = true
				sets = append(sets, labels.Set{key: v})
			}
		}
	}
	unnamed := func(base string) {
		for s := base; len(s) <= 63; s = "0" + s {
			if !named[s] {
				sets = append(sets, labels.Set{key: s})
				return
			}
		}
	}
	unnamed("x")
	if least, ok := leastNumber(reqs); ok {
		unnamed(strconv.FormatInt(least, 10))
	}
	return sets
}

// meetsAll reports whether set meets every requirement of reqs.
func meetsAll(reqs []labels.Requirement, set labels.Set) bool {
	for i := range reqs {
		if !reqs[i].Matches(set) {
			return false
		}
	}
	return true
}

// leastNumber is the least value at or above 0 (a label value cannot start with "-")
// above every Gt bound of reqs, if there is one.
func leastNumber(reqs []labels.Requirement) (int64, bool) {
	var least int64
	for _, r := range reqs {
		if r.Operator() != selection.GreaterThan {
			continue
		}
		for _, v := range r.ValuesUnsorted() {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n == math.MaxInt64 {
				return 0, false
			}
			least = max(least, n+1)
		}
	}
	return least, true
}

// everything reports whether set matches every name: one of its patterns is all stars.
func everything(set glob.Set) bool {
	for _, p := range set {
		if s := p.String(); s != "" && strings.Trim(s, "*") == "" {
			return true
		}
	}
	return false
}

// implies reports whether every object sel selects is selected by ex too: for each
// requirement of ex, no value of its label (nor its absence) meets sel's requirements on
// that label and fails it. "tier in (db, cache)", "tier!=web" and "tier" are implied by
// "tier=db", as "tier=db" is by itself. The values asked are those of satisfiable: the
// label absent, every value a requirement of sel or ex names, one value none names, and
// the least number sel's Gt bounds leave; any other value behaves as one of them. Labels
// are independent, so a requirement of ex is implied by sel's requirements on its own
// label alone.
func implies(sel, ex labels.Selector) bool {
	exReqs, ok := ex.Requirements()
	if !ok || len(exReqs) == 0 {
		return false
	}
	selReqs, ok := sel.Requirements()
	if !ok {
		return false
	}
	for _, e := range exReqs {
		var own []labels.Requirement
		for _, s := range selReqs {
			if s.Key() == e.Key() {
				own = append(own, s)
			}
		}
		if !impliedBy(own, e) {
			return false
		}
	}
	return true
}

// impliedBy reports whether every value of e's label (or its absence) that meets every
// requirement of reqs, all about that label, meets e too.
func impliedBy(reqs []labels.Requirement, e labels.Requirement) bool {
	for _, set := range candidateSets(e.Key(), reqs, e) {
		if meetsAll(reqs, set) && !e.Matches(set) {
			return false
		}
	}
	return true
}
