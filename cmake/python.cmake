# The Python interpreter for the Python module, the torch backend and their
# tests. Debian's Python packages (python3-numpy, python3-torch,
# python3-mpi4py) belong to the system interpreter; the first `python3` on
# PATH may be another one that cannot import them. So the candidates are
# tried in order -- -DMRC_PYTHON=..., /usr/bin/python3, python3 on PATH --
# and the first that imports numpy is taken; the choice is printed.
#
# Sets MRC_PYTHON (empty when none fits) and MRC_PYTHON_HAS_TORCH,
# MRC_PYTHON_HAS_MPI4PY (0 or 1).

set(MRC_PYTHON "" CACHE FILEPATH
    "Python interpreter that can import numpy (default: found)")

function(mrc_python_imports py module out)
  execute_process(COMMAND ${py} -c "import ${module}"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET
                  TIMEOUT 120)
  if(rc EQUAL 0)
    set(${out} 1 PARENT_SCOPE)
  else()
    set(${out} 0 PARENT_SCOPE)
  endif()
endfunction()

set(_mrc_py_candidates)
if(MRC_PYTHON)
  list(APPEND _mrc_py_candidates ${MRC_PYTHON})
endif()
list(APPEND _mrc_py_candidates /usr/bin/python3)
find_program(_mrc_path_python3 python3)
if(_mrc_path_python3)
  list(APPEND _mrc_py_candidates ${_mrc_path_python3})
endif()

set(_mrc_py_found "")
foreach(py IN LISTS _mrc_py_candidates)
  if(EXISTS ${py})
    mrc_python_imports(${py} numpy ok)
    if(ok)
      set(_mrc_py_found ${py})
      break()
    endif()
  endif()
endforeach()

set(MRC_PYTHON_HAS_TORCH 0)
set(MRC_PYTHON_HAS_MPI4PY 0)
if(_mrc_py_found)
  set(MRC_PYTHON ${_mrc_py_found} CACHE FILEPATH
      "Python interpreter that can import numpy" FORCE)
  mrc_python_imports(${MRC_PYTHON} torch MRC_PYTHON_HAS_TORCH)
  mrc_python_imports(${MRC_PYTHON} mpi4py MRC_PYTHON_HAS_MPI4PY)
  message(STATUS "mrc: Python ${MRC_PYTHON} (numpy yes, "
                 "torch ${MRC_PYTHON_HAS_TORCH}, "
                 "mpi4py ${MRC_PYTHON_HAS_MPI4PY})")
else()
  message(STATUS "mrc: no Python interpreter that imports numpy "
                 "(tried: ${_mrc_py_candidates}); Python tests are skipped")
endif()
