// Package printer renders results as kubectl does: borderless tables with upper-case
// headers, "resource.group/name" names, and kubectl's short durations.
package printer
