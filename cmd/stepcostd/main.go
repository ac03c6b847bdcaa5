// Command stepcostd serves the stepcost API: gRPC, and REST through a gateway.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/stepcost/stepcost/server"
)

func main() {
	cfg, err := server.ParseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if errors.Is(err, server.ErrVersion) {
		fmt.Println(server.Version("stepcostd"))
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stepcostd:", err)
		os.Exit(2)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Run(ctx, cfg, nil); err != nil {
		cfg.Logger.Error("exit", "err", err)
		os.Exit(1)
	}
}
