/* SPDX-License-Identifier: Apache-2.0 */
/* test_errors.c - the frontend's cudaError_t names and strings, the sticky
 * set, and the CUresult -> cudaError_t mapping, checked against the enums in
 * the installed CUDA headers so a new CUDA enumerator we do not handle fails.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cuda.h>

#include "cuda_enums.h"
#include "cuerr.h"
#include "../../frontend/runtime/errors.h"

#define MAX_ENUMERATORS 1024

static struct cuda_enumerator rt_errors[MAX_ENUMERATORS];
static int n_rt_errors;
static struct cuda_enumerator cu_results[MAX_ENUMERATORS];
static int n_cu_results;

static int load_enums(void **state)
{
	n_rt_errors = cuda_enums_parse("driver_types.h", "enum __device_builtin__ cudaError", rt_errors,
				       MAX_ENUMERATORS);
	n_cu_results = cuda_enums_parse("cuda.h", "typedef enum cudaError_enum", cu_results, MAX_ENUMERATORS);
	return n_rt_errors > 0 && n_cu_results > 0 ? 0 : -1;
}

static bool is_rt_enumerator(long v)
{
	for (int i = 0; i < n_rt_errors; i++)
		if (rt_errors[i].value == v)
			return true;
	return false;
}

static void test_headers_parsed(void **state)
{
	/* CUDA 13.0 has 134 cudaError and 101 CUresult enumerators; fewer means
	 * the parser lost its way, more is what the name test is for. */
	assert_true(n_rt_errors >= 134);
	assert_true(n_cu_results >= 101);
	assert_int_equal(rt_errors[0].value, 0);
	assert_string_equal(rt_errors[0].name, "cudaSuccess");
}

static void test_every_enumerator_named(void **state)
{
	for (int i = 0; i < n_rt_errors; i++) {
		cudaError_t e = (cudaError_t)rt_errors[i].value;
		const char *name = cudaGetErrorName(e);
		const char *desc = cudaGetErrorString(e);
		if (strcmp(name, rt_errors[i].name) != 0)
			fail_msg("%s (%ld) is named \"%s\": add it to frontend/runtime/errors.c", rt_errors[i].name,
				 rt_errors[i].value, name);
		assert_non_null(desc);
		assert_true(strlen(desc) > 3);
		assert_string_not_equal(desc, XGPU_RT_UNRECOGNIZED_ERROR);
	}
}

static void test_unknown_values(void **state)
{
	/* The real runtime answers both calls with this text for any value
	 * outside the enum. */
	static const long probes[] = {-1,  10,  11,  14,   29,   33,    47,      48,     99,
				      104, 202, 227, 305,  403,  501,   601,     706,    707,
				      722, 813, 916, 1000, 9999, 10001, INT_MAX, INT_MIN};
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		if (is_rt_enumerator(probes[i]))
			continue; /* a newer CUDA filled the gap */
		assert_string_equal(cudaGetErrorName((cudaError_t)probes[i]), XGPU_RT_UNRECOGNIZED_ERROR);
		assert_string_equal(cudaGetErrorString((cudaError_t)probes[i]), XGPU_RT_UNRECOGNIZED_ERROR);
	}
	for (long v = -16; v <= 11000; v++)
		if (!is_rt_enumerator(v))
			assert_string_equal(cudaGetErrorName((cudaError_t)v), XGPU_RT_UNRECOGNIZED_ERROR);
}

static void test_spot_names(void **state)
{
	assert_string_equal(cudaGetErrorName(cudaSuccess), "cudaSuccess");
	assert_string_equal(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
	assert_string_equal(cudaGetErrorName(cudaErrorNotSupported), "cudaErrorNotSupported");
	assert_string_equal(cudaGetErrorName(cudaErrorUnknown), "cudaErrorUnknown");
	assert_string_equal(cudaGetErrorName(cudaErrorApiFailureBase), "cudaErrorApiFailureBase");
	assert_string_equal(cudaGetErrorString(cudaErrorMemoryAllocation),
			    "not enough memory to complete the allocation");
}

static void test_sticky_set(void **state)
{
	static const cudaError_t sticky[] = {
	    cudaErrorECCUncorrectable,    cudaErrorNvlinkUncorrectable, cudaErrorContained,
	    cudaErrorIllegalAddress,      cudaErrorLaunchTimeout,       cudaErrorAssert,
	    cudaErrorHardwareStackError,  cudaErrorIllegalInstruction,  cudaErrorMisalignedAddress,
	    cudaErrorInvalidAddressSpace, cudaErrorInvalidPc,           cudaErrorLaunchFailure,
	    cudaErrorTensorMemoryLeak,    cudaErrorMpsClientTerminated, cudaErrorExternalDevice,
	};
	for (int i = 0; i < n_rt_errors; i++) {
		cudaError_t e = (cudaError_t)rt_errors[i].value;
		bool want = false;
		for (size_t j = 0; j < sizeof(sticky) / sizeof(sticky[0]); j++)
			want |= sticky[j] == e;
		if (xgpu_rt_error_is_sticky(e) != want)
			fail_msg("%s: sticky should be %d", rt_errors[i].name, want);
	}
	assert_false(xgpu_rt_error_is_sticky((cudaError_t)12345));
	assert_false(xgpu_rt_error_is_sticky(cudaSuccess));
	assert_false(xgpu_rt_error_is_sticky(cudaErrorMemoryAllocation));
	assert_false(xgpu_rt_error_is_sticky(cudaErrorLaunchOutOfResources));
}

static void test_cuerr_spots(void **state)
{
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_SUCCESS), cudaSuccess);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_OUT_OF_MEMORY), cudaErrorMemoryAllocation);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_NOT_INITIALIZED), cudaErrorInitializationError);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_DEINITIALIZED), cudaErrorCudartUnloading);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_INVALID_IMAGE), cudaErrorInvalidKernelImage);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_INVALID_CONTEXT), cudaErrorDeviceUninitialized);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_NO_BINARY_FOR_GPU), cudaErrorNoKernelImageForDevice);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_NOT_FOUND), cudaErrorSymbolNotFound);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_INVALID_HANDLE), cudaErrorInvalidResourceHandle);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE), cudaErrorSetOnActiveProcess);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_DEVICE_UNAVAILABLE), cudaErrorDevicesUnavailable);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_CONTEXT_ALREADY_IN_USE), cudaErrorDeviceAlreadyInUse);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_LAUNCH_FAILED), cudaErrorLaunchFailure);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_ILLEGAL_ADDRESS), cudaErrorIllegalAddress);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_NOT_SUPPORTED), cudaErrorNotSupported);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_UNKNOWN), cudaErrorUnknown);
	/* No cudaError_t has these numbers. */
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_CONTEXT_ALREADY_CURRENT), cudaErrorUnknown);
	assert_int_equal(xgpu_cuerr_to_rt(CUDA_ERROR_KEY_ROTATION), cudaErrorUnknown);
	/* Not CUresults at all (some are cudaError_t-only numbers). */
	static const int junk[] = {-1, 9, 35, 49, 127, 1000, 10000, INT_MAX, INT_MIN};
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		assert_int_equal(xgpu_cuerr_to_rt(junk[i]), cudaErrorUnknown);
}

static void test_launch_failure_set(void **state)
{
	static const int failures[] = {
	    CUDA_ERROR_ILLEGAL_ADDRESS,     CUDA_ERROR_LAUNCH_TIMEOUT,     CUDA_ERROR_HARDWARE_STACK_ERROR,
	    CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_INVALID_ADDRESS_SPACE,
	    CUDA_ERROR_INVALID_PC,          CUDA_ERROR_LAUNCH_FAILED,     CUDA_ERROR_ASSERT,
	};
	/* Exactly these among every CUresult of the installed cuda.h: both the
	 * simulated driver's launch_error() and xgpud's sticky() rely on it. */
	for (int i = 0; i < n_cu_results; i++) {
		int r = (int)cu_results[i].value;
		bool want = false;
		for (size_t j = 0; j < sizeof(failures) / sizeof(failures[0]); j++)
			want |= failures[j] == r;
		if (xgpu_cuerr_is_launch_failure(r) != want)
			fail_msg("%s: launch failure should be %d", cu_results[i].name, want);
		/* The frontend must take what broke the daemon's context as
		 * sticky too, or a guest would keep calling into a dead one. */
		if (want && !xgpu_rt_error_is_sticky((cudaError_t)xgpu_cuerr_to_rt(r)))
			fail_msg("%s is a launch failure but its runtime error is not sticky",
				 cu_results[i].name);
	}
	/* Context-breaking, but not a kernel's failure: exec.c adds these itself. */
	assert_false(xgpu_cuerr_is_launch_failure(CUDA_ERROR_ECC_UNCORRECTABLE));
	assert_false(xgpu_cuerr_is_launch_failure(CUDA_ERROR_CONTEXT_IS_DESTROYED));
	/* Not CUresults at all. */
	static const int junk[] = {-1, 1000, 10000, INT_MAX, INT_MIN};
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		assert_false(xgpu_cuerr_is_launch_failure(junk[i]));
}

static void test_every_curesult_maps(void **state)
{
	for (int i = 0; i < n_cu_results; i++) {
		int rt = xgpu_cuerr_to_rt((int)cu_results[i].value);
		if (!is_rt_enumerator(rt))
			fail_msg("%s maps to %d, not a cudaError_t", cu_results[i].name, rt);
		assert_string_not_equal(cudaGetErrorName((cudaError_t)rt), XGPU_RT_UNRECOGNIZED_ERROR);
		/* The real runtime reports the driver's number unchanged; we differ
		 * only where that number names no cudaError_t. */
		if (is_rt_enumerator(cu_results[i].value)) {
			if (rt != cu_results[i].value)
				fail_msg("%s (%ld) maps to %s (%d)", cu_results[i].name, cu_results[i].value,
					 cudaGetErrorName((cudaError_t)rt), rt);
		} else if (rt != cudaErrorUnknown) {
			fail_msg("%s (%ld) has no cudaError_t twin yet maps to %d", cu_results[i].name,
				 cu_results[i].value, rt);
		}
		/* A new CUresult falls into cuerr.c's default; catch it by name. */
		if (rt == cudaErrorUnknown && cu_results[i].value != CUDA_ERROR_UNKNOWN &&
		    cu_results[i].value != CUDA_ERROR_CONTEXT_ALREADY_CURRENT &&
		    cu_results[i].value != CUDA_ERROR_KEY_ROTATION)
			fail_msg("%s (%ld) is not in common/cuerr.c", cu_results[i].name,
				 cu_results[i].value);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_headers_parsed),     cmocka_unit_test(test_every_enumerator_named),
	    cmocka_unit_test(test_unknown_values),     cmocka_unit_test(test_spot_names),
	    cmocka_unit_test(test_sticky_set),         cmocka_unit_test(test_cuerr_spots),
	    cmocka_unit_test(test_launch_failure_set), cmocka_unit_test(test_every_curesult_maps),
	};
	return cmocka_run_group_tests(tests, load_enums, NULL);
}
