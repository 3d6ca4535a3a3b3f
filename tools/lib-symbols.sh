# SPDX-License-Identifier: Apache-2.0
# lib-symbols.sh - shell functions list-cuda-symbols.sh and
# list-cudart-symbols.sh share; sourced, not run.

# Writes stand-ins for the window-system headers the CUDA interop headers
# include into the folder $1 (GL/, EGL/, vdpau/), so that what the headers
# declare does not depend on which -dev packages are installed.
write_window_system_standins() {
	local dir=$1
	mkdir -p "$dir/GL" "$dir/EGL" "$dir/vdpau"
	printf 'typedef unsigned int GLuint;\ntypedef unsigned int GLenum;\n' >"$dir/GL/gl.h"
	printf 'typedef void *EGLImageKHR;\ntypedef void *EGLStreamKHR;\ntypedef void *EGLSyncKHR;\ntypedef int EGLint;\n' \
		>"$dir/EGL/egl.h"
	: >"$dir/EGL/eglext.h"
	printf 'typedef unsigned int VdpDevice;\ntypedef unsigned int VdpVideoSurface;\n%s\n%s\n' \
		'typedef unsigned int VdpOutputSurface;' \
		'typedef int VdpGetProcAddress(VdpDevice, unsigned int, void **);' >"$dir/vdpau/vdpau.h"
}
