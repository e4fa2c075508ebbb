package cli

import (
	"fmt"
	"io"

	"github.com/gait-dev/gait/internal/emulate"
	"github.com/gait-dev/gait/internal/interrupt"
	"github.com/gait-dev/gait/internal/limpfs"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/gait-dev/gait/internal/units"
	"github.com/spf13/cobra"
)

func newEmulateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "emulate",
		Short: "Store synthetic data as descriptions: disks far larger than the machine's",
		Long: `An emulating file system keeps the synthetic stream that 'gait emulate gen'
writes (and that storage systems copy, split and frame) as descriptions
(seed, offset, length) and only other bytes as they are, so a machine can
hold far more data than its disk. See docs/emulate.md.`,
	}
	cmd.AddCommand(newEmulateMountCmd(), newEmulateGenCmd(), newEmulateStatsCmd())
	return cmd
}

func newEmulateMountCmd() *cobra.Command {
	var m emulate.Mount
	var bandwidth string
	var factor float64
	cmd := &cobra.Command{
		Use:   "mount DIR --store STORE",
		Short: "Serve an emulating file system on DIR until SIGINT or SIGTERM",
		Long: `Mount an emulating file system on DIR whose files live in STORE (an empty
or new directory becomes a store; a store keeps its files across mounts and
crashes). It serves until SIGINT or SIGTERM, then unmounts. 'mounted DIR'
on standard output says it is ready. With --bandwidth, --latency or
--factor it is also a slow disk. If the command is killed, 'gait clean'
unmounts DIR.`,
		Example: `  # long: minutes, root: writes 10 GiB through the mount
  sudo gait emulate mount /mnt/big --store /var/tmp/big &
  # needs: the mount above
  gait emulate gen --seed 1 --bytes 10GiB > /mnt/big/data
  gait emulate stats /var/tmp/big
  kill %1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if m.Store == "" {
				return fmt.Errorf("--store: give the directory the files are kept in")
			}
			if bandwidth != "" {
				bw, err := limpfs.ParseBandwidth(bandwidth)
				if err != nil {
					return fmt.Errorf("--bandwidth: %w", err)
				}
				m.Bandwidth = bw
			}
			if m.Latency < 0 {
				return fmt.Errorf("--latency %s: must not be negative", m.Latency)
			}
			if err := testbed.NeedRoot(); err != nil {
				return err
			}
			m.Dir = args[0]
			stderr := cmd.ErrOrStderr()
			m.Report = func(err error) { fmt.Fprintln(stderr, "gait:", err) }
			sig := interrupt.Catch(cmd.Context(), stderr, interrupt.Messages{First: "unmounting"})
			defer sig.Stop()
			var setErr error
			err := emulate.Serve(sig.Context(), m, func(f *limpfs.FS) {
				if setErr = f.SetFactor(factor); setErr != nil {
					sig.Stop() // unmount at once
					return
				}
				fmt.Fprintf(cmd.OutOrStdout(), "mounted %s\n", f.Mountpoint)
			})
			if setErr != nil {
				return fmt.Errorf("--factor: %w", setErr)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&m.Store, "store", "", "the directory the files are kept in (required)")
	cmd.Flags().StringVar(&bandwidth, "bandwidth", "", "emulate a disk of this bandwidth, e.g. 80MB/s (default: no limit)")
	durationVar(cmd.Flags(), &m.Latency, "latency", 0, "added to every read, write and fsync")
	cmd.Flags().Float64Var(&factor, "factor", 1, "slow the disk down by this factor (needs --bandwidth or --latency to matter)")
	cmd.Flags().BoolVar(&m.WriteBack, "write-back", false, "let the kernel cache writes and pass them on in 1 MiB pieces (default: each write goes straight to the server, direct I/O)")
	cmd.Flags().StringVar(&m.StateDir, "state-dir", testbed.DefaultStateDir, "where the mount is recorded for 'gait clean' (in its emulate/)")
	return cmd
}

func newEmulateGenCmd() *cobra.Command {
	var seed uint64
	var size, offset, writeSize string
	cmd := &cobra.Command{
		Use:   "gen --seed S --bytes N",
		Short: "Write the synthetic stream to standard output",
		Long: `Write N bytes of the synthetic stream named by seed S, from stream offset
--offset, to standard output: what workloads write onto an emulating file
system.`,
		Example: `  # needs: an emulating mount at /mnt/big (gait emulate mount --help)
  gait emulate gen --seed 7 --bytes 1GiB > /mnt/big/f
  gait emulate gen --seed 7 --bytes 1GiB --write-size 64KiB > /mnt/big/g
  gait emulate gen --seed 7 --bytes 64KiB --offset 1MiB | cmp - <(dd if=/mnt/big/f bs=64K skip=16 count=1 status=none)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := load.ParseSize(size)
			if err != nil {
				return fmt.Errorf("--bytes: %w", err)
			}
			off, err := load.ParseSize(offset)
			if err != nil {
				return fmt.Errorf("--offset: %w", err)
			}
			ws, err := load.ParseSize(writeSize)
			if err != nil || ws < 1 || ws > emulate.MaxWriteSize {
				return fmt.Errorf("--write-size %q: want a size from 1 byte to 1GiB, e.g. 64KiB", writeSize)
			}
			return emulate.Gen(cmd.OutOrStdout(), seed, uint64(off), n, int(ws))
		},
	}
	cmd.Flags().Uint64Var(&seed, "seed", 1, "which stream")
	cmd.Flags().StringVar(&size, "bytes", "", "how many bytes, e.g. 4096, 64KiB, 10GiB (required)")
	cmd.Flags().StringVar(&offset, "offset", "0", "where in the stream to start")
	cmd.Flags().StringVar(&writeSize, "write-size", "1MiB", "the size of each write(2), as a file system under standard output sees them")
	cmd.MarkFlagRequired("bytes")
	return cmd
}

func newEmulateStatsCmd() *cobra.Command {
	var end ending
	cmd := &cobra.Command{
		Use:   "stats STORE [--format json]",
		Short: "Show a store's logical and physical bytes",
		Long: `Add up a store's files: logical bytes (what the mount shows), physical
bytes (what the store takes on disk: literal bytes and metadata) and their
ratio. It reads what was last committed (on close, fsync or truncate) and
checks every metadata file on the way; a damaged one is named with the
offset of the damage.`,
		Example: `  # needs: a store an emulating mount used (gait emulate mount --help)
  gait emulate stats /var/tmp/big
  gait emulate stats /var/tmp/big --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := end.check(); err != nil {
				return err
			}
			s, err := limpfs.ReadStoreStats(args[0])
			if err != nil {
				return err
			}
			return end.finish(cmd.OutOrStdout(), result{
				json: jsonOf(s),
				text: func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "%d files: %d bytes logical, %d physical, ratio %s\n",
						s.Files, s.LogicalBytes, s.PhysicalBytes, units.Sig(s.Ratio))
					return err
				},
			})
		},
	}
	end.flags(cmd.Flags(), "text or json (fields files, logical_bytes, physical_bytes, ratio)", "")
	return cmd
}
