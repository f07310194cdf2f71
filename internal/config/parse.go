package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Parsers of the settings' values, shared by their declarations.

func durationIn(field func(*Config) *time.Duration, lo, hi time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("must be a Go duration such as 1s or 250ms, got %q", v)
		}
		if d < lo || d > hi {
			return fmt.Errorf("must be between %s and %s, got %s", lo, hi, d)
		}
		*field(c) = d
		return nil
	}
}

func intIn(field func(*Config) *int, lo, hi int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer between %d and %d, got %q", lo, hi, v)
		}
		*field(c) = n
		return nil
	}
}

func onOff(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		switch strings.ToLower(v) {
		case "on":
			*field(c) = true
		case "off":
			*field(c) = false
		default:
			return fmt.Errorf("must be \"on\" or \"off\", got %q", v)
		}
		return nil
	}
}
