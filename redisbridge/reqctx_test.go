package redisbridge

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestReqCtx(t *testing.T) {
	t.Run("deadline passes without Done", func(t *testing.T) {
		ctx, cancel := newReqCtx(time.Millisecond)
		defer cancel()
		if err := ctx.Err(); err != nil {
			t.Fatalf("Err before the deadline = %v", err)
		}
		d, ok := ctx.Deadline()
		if !ok || time.Until(d) > time.Millisecond {
			t.Fatalf("Deadline = %v, %v", d, ok)
		}
		for ctx.Err() == nil {
			time.Sleep(100 * time.Microsecond) // polling Err is what is tested
		}
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err = %v, want DeadlineExceeded", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed after the deadline")
		}
	})
	t.Run("Done closes at the deadline", func(t *testing.T) {
		ctx, cancel := newReqCtx(5 * time.Millisecond)
		defer cancel()
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed")
		}
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v", ctx.Err())
		}
	})
	t.Run("cancel before and after Done", func(t *testing.T) {
		for _, built := range []bool{false, true} {
			ctx, cancel := newReqCtx(time.Hour)
			if built {
				_ = ctx.Done()
			}
			child, childCancel := context.WithCancel(ctx)
			cancel()
			if !errors.Is(ctx.Err(), context.Canceled) {
				t.Fatalf("built=%v: Err = %v", built, ctx.Err())
			}
			select {
			case <-ctx.Done():
			default:
				t.Fatalf("built=%v: Done open after cancel", built)
			}
			select {
			case <-child.Done():
			case <-time.After(5 * time.Second):
				t.Fatalf("built=%v: derived context not cancelled", built)
			}
			childCancel()
		}
	})
	t.Run("AfterFunc runs on cancel", func(t *testing.T) {
		ctx, cancel := newReqCtx(time.Hour)
		ran := make(chan struct{})
		context.AfterFunc(ctx, func() { close(ran) })
		cancel()
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			t.Fatal("AfterFunc did not run")
		}
	})
}
