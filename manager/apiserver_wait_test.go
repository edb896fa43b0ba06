package manager

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWaitForAPIServerRetriesOnlyWhileTheServerDoesNotAnswer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	calls := 0
	err := waitForAPIServer(ctx, func() error {
		calls++
		if calls < 3 {
			return errors.Join(errors.New("dial tcp 127.0.0.1:6443"), syscall.ECONNREFUSED)
		}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls).To(Equal(3))

	calls = 0
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "flotilla-system", errors.New("no"))
	err = waitForAPIServer(ctx, func() error { calls++; return forbidden })
	g.Expect(err).To(Equal(error(forbidden)), "an answer is not waited out")
	g.Expect(calls).To(Equal(1))

	for _, starting := range []error{
		apierrors.NewServiceUnavailable("the server is starting"),
		apierrors.NewInternalError(errors.New("poststarthook/rbac/bootstrap-roles failed")),
		apierrors.NewTooManyRequests("the server is busy", 1),
		apierrors.NewTimeoutError("the request did not finish", 1),
	} {
		calls = 0
		err = waitForAPIServer(ctx, func() error {
			calls++
			if calls < 2 {
				return starting
			}
			return nil
		})
		g.Expect(err).NotTo(HaveOccurred(), "%v: a server that cannot serve yet is waited for", starting)
		g.Expect(calls).To(Equal(2))
	}

	calls = 0
	missing := fmt.Errorf("%w: flotilla-system does not exist: %w", errNamespaceMissing, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "flotilla-system"))
	err = waitForAPIServer(ctx, func() error {
		calls++
		if calls < 2 {
			return missing
		}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred(), "a namespace the manager needs is waited for")
	g.Expect(calls).To(Equal(2))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = waitForAPIServer(cancelled, func() error { return syscall.ECONNREFUSED })
	g.Expect(err).To(MatchError(ContainSubstring("the API server did not answer")))
}
