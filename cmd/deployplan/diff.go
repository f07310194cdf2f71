package main

import (
	"fmt"
	"strings"
)

// lcs returns, for two line lists, which lines of a are kept in b (by a
// longest common subsequence).
func lcs(a, b []string) []bool {
	n, m := len(a), len(b)
	t := make([][]int, n+1)
	for i := range t {
		t[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	kept := make([]bool, n)
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case a[i] == b[j]:
			kept[i] = true
			i, j = i+1, j+1
		case t[i+1][j] >= t[i][j+1]:
			i++
		default:
			j++
		}
	}
	return kept
}

// lostLines returns the lines of the app's rules the ruleset lacks: a
// ruleset deployed in the app's name must hold every one of them.
func lostLines(app, ruleset string) []string {
	a := strings.Split(app, "\n")
	var lost []string
	for i, k := range lcs(a, strings.Split(ruleset, "\n")) {
		if !k {
			lost = append(lost, a[i])
		}
	}
	return lost
}

// diffSummary says how a ruleset differs from the app's file: lines taken
// out (-) and added (+).
func diffSummary(app, ruleset string) string {
	if app == ruleset {
		return fmt.Sprintf("no difference: it is the file as it is (%d lines)", strings.Count(app, "\n"))
	}
	a, r := strings.Split(app, "\n"), strings.Split(ruleset, "\n")
	var out []string
	for i, k := range lcs(a, r) {
		if !k {
			out = append(out, "-"+a[i])
		}
	}
	for i, k := range lcs(r, a) {
		if !k {
			out = append(out, "+"+r[i])
		}
	}
	return "\n#   " + strings.Join(out, "\n#   ")
}
