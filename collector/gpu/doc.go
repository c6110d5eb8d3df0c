// SPDX-License-Identifier: Apache-2.0

// Package gpu is the gpu collector: NVIDIA GPUs and MIG instances per job
// and GPUs no job holds, from the node's GPU backend (package gpu), which
// cmd opens.
package gpu
