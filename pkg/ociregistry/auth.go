package ociregistry

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
)

// realm is the basic-auth realm the registry names in its challenges.
const realm = "flotilla registry"

// HTPasswdCost is the bcrypt cost of the passwords SetHTPasswdUser writes.
const HTPasswdCost = bcrypt.DefaultCost

const (
	// authCacheTTL is how long a verified user and password are accepted without bcrypt again.
	authCacheTTL = 5 * time.Minute
	// authCacheSize bounds the cache; it is emptied when full.
	authCacheSize = 1024
)

// unknownUserHash is a bcrypt hash of a random password nobody knows: a request naming an
// unknown user is checked against it, so it takes as long as one naming a known user.
const unknownUserHash = "$2a$10$8GD64sHeJwYIqlV4oSnb9.cF3k53HZ/lYaSwYLPBwuJ4PWA6.W/2O"

// authenticator checks HTTP basic credentials against an htpasswd file's bcrypt hashes.
type authenticator struct {
	users map[string][]byte
	now   func() time.Time
	// slots bounds the bcrypt comparisons running at once, so that a flood of wrong passwords
	// costs the machine at most that many cores.
	slots chan struct{}
	// salt keys the cache, so that its keys are useless outside this process.
	salt []byte

	mu    sync.Mutex
	cache map[[sha256.Size]byte]time.Time
}

// newAuthenticator reads the htpasswd file at path.
func newAuthenticator(path string, now func() time.Time) (*authenticator, error) {
	data, err := os.ReadFile(path) //nolint:gosec // the file the operator names
	if err != nil {
		return nil, fmt.Errorf("reading the htpasswd file: %w", err)
	}
	users, err := ParseHTPasswd(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("%s has no users: add one with 'flotilla registry htpasswd USER --file %s'", path, path)
	}
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("salting the credentials cache: %w", err)
	}
	return &authenticator{
		users: users, now: now, salt: salt,
		slots: make(chan struct{}, max(runtime.NumCPU()/2, 1)),
		cache: map[[sha256.Size]byte]time.Time{},
	}, nil
}

// ParseHTPasswd parses an htpasswd file: one "user:hash" per line, where hash is bcrypt
// ($2a$, $2b$ or $2y$, as `htpasswd -B` writes); blank lines and lines starting with # are
// skipped. Other hash types (MD5, SHA-1, crypt, plain text) are refused, naming the line.
func ParseHTPasswd(data []byte) (map[string][]byte, error) {
	users := map[string][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		switch {
		case !ok || user == "":
			return nil, fmt.Errorf("line %d: not user:hash", n)
		case users[user] != nil:
			return nil, fmt.Errorf("line %d: user %q appears twice", n, user)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("line %d: user %q: only bcrypt hashes are accepted (htpasswd -B, or 'flotilla registry htpasswd'): %w", n, user, err)
		}
		users[user] = []byte(hash)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	return users, nil
}

// SetHTPasswdUser sets user's password in the htpasswd file at path (created, mode 0600, when
// missing), keeping the other users and the comments.
func SetHTPasswdUser(path, user, password string) error {
	if user == "" || strings.ContainsAny(user, ":\n\r") || strings.TrimSpace(user) != user {
		return fmt.Errorf("user name %q: not empty, without ':', line breaks or surrounding spaces", user)
	}
	if password == "" {
		return errors.New("the password is empty")
	}
	data, err := os.ReadFile(path) //nolint:gosec // the file the operator names
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the htpasswd file: %w", err)
	}
	if _, err := ParseHTPasswd(data); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), HTPasswdCost)
	if err != nil {
		return fmt.Errorf("hashing the password: %w", err)
	}
	entry := user + ":" + string(hash)
	var out []string
	replaced := false
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		if name, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && name == user && !strings.HasPrefix(line, "#") {
			line, replaced = entry, true
		}
		out = append(out, line)
	}
	if !replaced {
		out = append(out, entry)
	}
	return atomicfile.Write(path, []byte(strings.Join(out, "\n")+"\n"))
}

// challenge answers a request without valid credentials, saying why in message.
func challenge(w http.ResponseWriter, message string) {
	w.Header().Set("WWW-Authenticate", `Basic realm="`+realm+`", charset="UTF-8"`)
	writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", message)
}

// allow returns the user req authenticates as, and whether its basic credentials are valid.
func (a *authenticator) allow(req *http.Request) (string, bool) {
	user, password, ok := req.BasicAuth()
	if !ok {
		return "", false
	}
	key := a.cacheKey(user, password)
	now := a.now()
	a.mu.Lock()
	expires, cached := a.cache[key]
	a.mu.Unlock()
	if cached && now.Before(expires) {
		return user, true
	}
	hash, known := a.users[user]
	if !known {
		hash = []byte(unknownUserHash)
	}
	select {
	case a.slots <- struct{}{}:
	case <-req.Context().Done():
		return user, false
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	<-a.slots
	if err != nil || !known {
		return user, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= authCacheSize {
		clear(a.cache)
	}
	a.cache[key] = now.Add(authCacheTTL)
	return user, true
}

// cacheKey is a salted hash of user and password. The user is length-prefixed, so that no two
// pairs share a key.
func (a *authenticator) cacheKey(user, password string) [sha256.Size]byte {
	h := sha256.New()
	h.Write(a.salt)
	_, _ = fmt.Fprintf(h, "%d:%s:%s", len(user), user, password)
	var key [sha256.Size]byte
	copy(key[:], h.Sum(nil))
	return key
}
