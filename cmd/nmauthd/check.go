package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/nmauth/nmauth"
)

// check lists the records the database holds but cannot decode; with
// --repair it resets each broken column to a safe value, each repair an
// audit event. A broken record answers 500 for its own account only, so
// the server runs on while an administrator repairs it.
func check(ctx context.Context, c *cli, o *options, _ []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		// --repair scans once, repairing what it finds, rather than scan
		// to list and again to repair: a scan of millions of rows takes
		// a while.
		var broken []*nmauth.BrokenRecordError
		var err error
		if o.repair {
			if broken, err = b.auth.Admin().RepairRecords(ctx); err != nil {
				return fmt.Errorf("check --repair: %d repaired before: %w", len(broken), err)
			}
		} else if broken, err = b.auth.Admin().BrokenRecords(ctx); err != nil {
			return fmt.Errorf("check: %w", err)
		}
		if len(broken) == 0 {
			fmt.Fprintln(c.stdout, "no broken records")
			return nil
		}
		w := tabwriter.NewWriter(c.stdout, 0, 8, 2, ' ', 0)
		fmt.Fprintln(w, "KIND\tNAME\tCOLUMN\tERROR")
		for _, r := range broken {
			fmt.Fprintf(w, "%s\t%s\t%s\t%v\n", r.Kind, r.Key, r.Column, r.Err)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if o.repair {
			fmt.Fprintf(c.stdout, "%d broken columns reset to a safe value\n", len(broken))
		} else {
			fmt.Fprintf(c.stdout, "%d broken columns; nmauthd check --repair resets each to a safe value\n", len(broken))
		}
		return nil
	})
}
