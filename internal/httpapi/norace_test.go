//go:build !race

package httpapi

const raceSlowdown = 1
