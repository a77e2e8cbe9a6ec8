#!/usr/bin/env bash
# The wgpu backend suites (losses, trainer steps, Qwen3 against the HF fixtures) on the CPU through
# Mesa's lavapipe Vulkan driver, as CI runs them (docs/backends.md).
#
#   bash scripts/wgpu-lavapipe.sh     # installs mesa-vulkan-drivers + libvulkan1 when missing (root)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; then
    echo "installing Mesa's Vulkan drivers (lavapipe)"
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo_cmd apt-get update -qq || true
    $sudo_cmd apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null || true
fi
if ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; then
    # Not silent: say so loudly, and still prove the wgpu code paths build.
    echo "WARNING: lavapipe could not be installed (apt-get install mesa-vulkan-drivers libvulkan1 failed);"
    echo "WARNING: the wgpu suites are NOT run; checking that they build instead."
    cargo check -p rl-loss -p rl-trainer -p rl-models --tests \
        --features rl-loss/wgpu,rl-trainer/wgpu,rl-models/wgpu
    exit 0
fi
# Only lavapipe, whatever else is installed.
VK_ICD_FILENAMES="$(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -n 1)"
export VK_ICD_FILENAMES

# Mesa's loader warns without one.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
# Autotuning benchmarks many kernel variants; on a software rasteriser that costs minutes.
export CUBECL_AUTOTUNE_LEVEL="${CUBECL_AUTOTUNE_LEVEL:-minimal}"

# One cargo invocation, so burn is built once with one feature set.
cargo test -p rl-loss -p rl-trainer -p rl-models \
    --features rl-loss/wgpu,rl-trainer/wgpu,rl-models/wgpu \
    --test loss --test steps --test qwen3_hf -- wgpu::
