/* A stub libcuda.so for linking AOTI packages on a machine with no driver: every entry fails. */
#define STUB(name) int name(void) { return 999; }
STUB(cuFuncSetAttribute) STUB(cuGetErrorString) STUB(cuLaunchKernel) STUB(cuModuleGetFunction)
STUB(cuModuleLoad) STUB(cuModuleLoadData) STUB(cuModuleUnload) STUB(cuGetErrorName) STUB(cuInit)
STUB(cuDeviceGet) STUB(cuCtxGetCurrent) STUB(cuPointerGetAttribute) STUB(cuStreamSynchronize)
STUB(cuLaunchKernelEx) STUB(cuOccupancyMaxActiveClusters) STUB(cuFuncGetAttribute)
STUB(cuTensorMapEncodeTiled) STUB(cuDriverGetVersion) STUB(cuCtxSynchronize)
