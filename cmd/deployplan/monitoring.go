package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shardcount/shardcount/internal/config"
)

// monitoringDir holds the dashboard and the alert policies
// (docs/operations/observability.md).
const monitoringDir = "monitoring"

// lagThreshold is the placeholder of the roll-up lag alert's threshold:
// two cadences, in seconds, from the ROLLUP_CADENCE deployed.
const lagThreshold = "LAG_THRESHOLD_SECONDS"

// writeMonitoring plans the dashboard and the alert policies, created or
// updated by display name. Their JSON is in the plan itself, so the dry
// run shows what is sent. ALERT_NOTIFICATION_CHANNELS (comma-separated
// channel names) are attached to the policies when set.
func (p *plan) writeMonitoring(w io.Writer, cfg config.Config, channels string) error {
	files, err := filepath.Glob(filepath.Join(monitoringDir, "alerts", "*.json"))
	if err != nil {
		return err
	}
	q := shellQuote
	fmt.Fprintln(w, "# Monitoring (monitoring/): the dashboard and the alert policies, created or updated by display name.")
	fmt.Fprintln(w, `mon=$(mktemp -d)`)
	dashboard, err := os.ReadFile(filepath.Join(monitoringDir, "dashboard.json"))
	if err != nil {
		return err
	}
	heredoc(w, "$mon/dashboard.json", dashboard)
	fmt.Fprintf(w, "name=$(gcloud monitoring dashboards list --project=%s --filter='displayName=\"shardcount\"' --format='value(name)' | head -n 1)\n", q(p.project))
	fmt.Fprintf(w, "if [ -n \"$name\" ]; then gcloud monitoring dashboards update \"$name\" --project=%s --config-from-file=\"$mon/dashboard.json\"; else gcloud monitoring dashboards create --project=%s --config-from-file=\"$mon/dashboard.json\"; fi\n",
		q(p.project), q(p.project))
	threshold := strconv.FormatFloat(2*cfg.RollupCadence.Seconds(), 'f', -1, 64)
	// create takes --notification-channels, update --set-notification-channels.
	var onCreate, onUpdate string
	if channels != "" {
		onCreate, onUpdate = " --notification-channels="+q(channels), " --set-notification-channels="+q(channels)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		policy := strings.ReplaceAll(string(b), lagThreshold, threshold)
		display, err := displayName(policy)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		file := "$mon/" + filepath.Base(f)
		heredoc(w, file, []byte(policy))
		fmt.Fprintf(w, "name=$(gcloud alpha monitoring policies list --project=%s --filter=%s --format='value(name)' | head -n 1)\n",
			q(p.project), q(fmt.Sprintf("displayName=%q", display)))
		fmt.Fprintf(w, "if [ -n \"$name\" ]; then gcloud alpha monitoring policies update \"$name\" --project=%s --policy-from-file=\"%s\"%s; else gcloud alpha monitoring policies create --project=%s --policy-from-file=\"%s\"%s; fi\n",
			q(p.project), file, onUpdate, q(p.project), file, onCreate)
	}
	return nil
}

// heredoc writes content to file in the plan.
func heredoc(w io.Writer, file string, content []byte) {
	fmt.Fprintf(w, "cat > \"%s\" <<'SHARDCOUNT_JSON'\n%s\nSHARDCOUNT_JSON\n", file, strings.TrimRight(string(content), "\n"))
}

// displayName is a policy's displayName.
func displayName(policy string) (string, error) {
	var p struct {
		DisplayName string `json:"displayName"`
	}
	if err := json.Unmarshal([]byte(policy), &p); err != nil || p.DisplayName == "" {
		return "", fmt.Errorf("not an alert policy with a displayName: %v", err)
	}
	return p.DisplayName, nil
}
