package cmd

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// listOutput is what a get or list command found, in the forms -o chooses from: object for
// json and yaml, a table otherwise. The commands build it with a pure function of what they
// read, and print it with print.
type listOutput struct {
	// object is printed by -o json|yaml: a typed list with apiVersion and kind.
	object any
	// empty goes to the error stream instead of a table without rows; without it the header
	// is printed alone.
	empty string
	// columns head the table; wide are the columns -o wide adds after them.
	columns, wide []string
	// rows hold each row's cells: one per column, then one per wide column.
	rows [][]string
}

// row adds a row of cells: one per column, then one per wide column.
func (l *listOutput) row(cells ...string) {
	l.rows = append(l.rows, cells)
}

// print writes l as format asks ("", wide, json or yaml): tables to s.Out aligned in columns
// three spaces apart, as kubectl does.
func (l *listOutput) print(s genericiooptions.IOStreams, format string) error {
	if format == OutputJSON || format == OutputYAML {
		return PrintStructured(s.Out, format, l.object)
	}
	if len(l.rows) == 0 && l.empty != "" {
		_, err := fmt.Fprintln(s.ErrOut, l.empty)
		return err
	}
	header := l.columns
	if format == OutputWide {
		header = slices.Concat(l.columns, l.wide)
	}
	tw := tabwriter.NewWriter(s.Out, 0, 2, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range l.rows {
		fmt.Fprintln(tw, strings.Join(r[:len(header)], "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// age is how long ago t was, as kubectl's AGE column says it.
func age(now, t time.Time) string {
	return duration.HumanDuration(now.Sub(t))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
