/* The cast kernel compiled by nvcc, for the CUDA backend. */
#define UFG_CAST_LAUNCHER ufg_cast_launch_cuda
#include "cast_kernel.h"
