package cli

import "github.com/spf13/cobra"

func newDoctorCmd(a *App) *cobra.Command {
	return withDir(stub("doctor", "Audit the live machine against the project's artifacts", "doctor", cobra.NoArgs))
}
