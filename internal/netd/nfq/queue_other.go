//go:build !linux

package nfq

import "errors"

// Queue is Linux-only: NFQUEUE is a Linux netfilter facility, and netd runs on Linux.
type Queue struct{}

var errNotLinux = errors.New("nfq: nfqueue exists only on Linux")

// Open fails: there is no NFQUEUE here.
func Open(Config) (*Queue, error) { return nil, errNotLinux }

// Recv fails: there is no NFQUEUE here.
func (*Queue) Recv() (Packet, error) { return Packet{}, errNotLinux }

// Accept fails: there is no NFQUEUE here.
func (*Queue) Accept(uint32) error { return errNotLinux }

// Drop fails: there is no NFQUEUE here.
func (*Queue) Drop(uint32) error { return errNotLinux }

// Repeat fails: there is no NFQUEUE here.
func (*Queue) Repeat(uint32, uint32) error { return errNotLinux }

// RepeatWith fails: there is no NFQUEUE here.
func (*Queue) RepeatWith(uint32, uint32, []byte) error { return errNotLinux }

// Stats is always zero here.
func (*Queue) Stats() Stats { return Stats{} }

// Close does nothing here.
func (*Queue) Close() error { return nil }
