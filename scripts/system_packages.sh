#!/usr/bin/env bash
# Install the Debian packages that some optional tests need, where this machine can (root and apt-get):
#   slurmctld slurmd slurm-client munge   a real single-node SLURM cluster for tests/test_slurm.py and the sweep
#                                          test of tests/test_integration.py (tests/slurm_cluster.py starts it)
#   chromium chromium-driver              headless Chromium for tests/test_report_browser.py (through Selenium)
# Without them those tests skip with the reason; nothing else needs them. Idempotent; a failed install only warns.
#
#   scripts/system_packages.sh           (.ci/run calls it before the test command)
set -uo pipefail
packages=(slurmctld slurmd slurm-client munge chromium chromium-driver)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "system_packages: ${missing[*]} not installed (needs root and apt-get); the tests that need them will skip"
  exit 0
fi
echo "system_packages: installing ${missing[*]}"
# the packages' own services must not start: the tests start their daemons from a temporary config
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d.biaslab && chmod +x /usr/sbin/policy-rc.d.biaslab
[ -e /usr/sbin/policy-rc.d ] || ln -s /usr/sbin/policy-rc.d.biaslab /usr/sbin/policy-rc.d
if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
       || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "${missing[@]}" >/dev/null; }; }; then
  echo "system_packages: could not install ${missing[*]}; the tests that need them will skip"
fi
[ "$(readlink /usr/sbin/policy-rc.d 2>/dev/null)" = /usr/sbin/policy-rc.d.biaslab ] && rm -f /usr/sbin/policy-rc.d
rm -f /usr/sbin/policy-rc.d.biaslab
exit 0
