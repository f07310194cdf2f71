package increment

import "github.com/shardcount/shardcount/internal/errs"

// maxKeyLength bounds an idempotency key.
const maxKeyLength = 255

// ValidateKey checks an idempotency key that was given.
func ValidateKey(field string, key *string) error {
	switch {
	case key == nil:
		return nil
	case *key == "":
		return errs.Invalid(field, "must not be empty")
	case len(*key) > maxKeyLength:
		return errs.Invalid(field, "must be at most %d characters", maxKeyLength)
	}
	for i := 0; i < len(*key); i++ {
		if c := (*key)[i]; c < 0x21 || c > 0x7e {
			return errs.Invalid(field, "must be printable ASCII without spaces")
		}
	}
	return nil
}
