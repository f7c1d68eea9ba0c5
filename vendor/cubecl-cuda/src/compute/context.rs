use cubecl_common::backtrace::BackTrace;
use cubecl_cpp::formatter::format_cpp;
use cubecl_cpp::{cuda::arch::CudaArchitecture, shared::CompilationOptions};
use cubecl_runtime::{
    compiler::CompilationError,
    validation::{validate_cube_dim, validate_units},
};

use super::storage::gpu::GpuResource;
use crate::{CudaCompiler, compute::stream::Stream};
use crate::{
    CudaComputeKernel,
    install::{cccl_include_path, include_path},
};
use cubecl_core::{
    server::ResourceLimitError,
    {ir::DeviceProperties, prelude::*},
};
use cubecl_runtime::kernel_cache;
use cubecl_runtime::timestamp_profiler::TimestampProfiler;
use cubecl_runtime::{compiler::CubeTask, logging::ServerLogger};
use cudarc::driver::DriverError;
use cudarc::driver::sys::CUfunc_st;
use cudarc::driver::sys::{CUctx_st, CUfunction_attribute, CUtensorMap};
use std::collections::HashMap;
use std::ffi::CString;
use std::ffi::c_char;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;
use std::{ffi::CStr, os::raw::c_void};

#[derive(Debug)]
pub(crate) struct CudaContext {
    pub context: *mut CUctx_st,
    pub module_names: HashMap<KernelId, CompiledKernel>,
    /// (SD Bench) The kernel store's folder for this device: everything that changes the code.
    cache_namespace: String,
    /// (SD Bench) NVRTC's version (major, minor): `-pch` needs 12.8.
    nvrtc_version: (i32, i32),
    pub timestamps: TimestampProfiler,
    pub arch: CudaArchitecture,
    pub compilation_options: CompilationOptions,
    pub properties: DeviceProperties,
}

#[derive(Debug)]
pub struct CompiledKernel {
    cube_dim: CubeDim,
    shared_mem_bytes: usize,
    func: *mut CUfunc_st,
}

/// (SD Bench) A compiled kernel as the kernel store keeps it: its entry point, its shared memory,
/// and the image the driver loads (a cubin, or PTX where no cubin could be loaded).
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct CachedKernel {
    entrypoint_name: String,
    shared_mem_bytes: usize,
    image: Vec<u8>,
}

impl CachedKernel {
    fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(16 + self.entrypoint_name.len() + self.image.len());
        bytes.extend_from_slice(&(self.entrypoint_name.len() as u64).to_le_bytes());
        bytes.extend_from_slice(self.entrypoint_name.as_bytes());
        bytes.extend_from_slice(&(self.shared_mem_bytes as u64).to_le_bytes());
        bytes.extend_from_slice(&self.image);
        bytes
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        let name_len = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) as usize;
        let name_end = name_len.checked_add(8)?;
        let name = bytes.get(8..name_end)?;
        let shared = bytes.get(name_end..name_end.checked_add(8)?)?;
        Some(Self {
            entrypoint_name: String::from_utf8(name.to_vec()).ok()?,
            shared_mem_bytes: u64::from_le_bytes(shared.try_into().ok()?) as usize,
            image: bytes.get(name_end + 8..)?.to_vec(),
        })
    }
}

/// (SD Bench) NVRTC's version, or (0, 0) when it cannot say.
fn nvrtc_version() -> (i32, i32) {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters; NVRTC is loaded by cudarc on first use.
    let ok = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }.result();
    if ok.is_ok() { (major, minor) } else { (0, 0) }
}

/// (SD Bench) The CUDA version the driver supports (e.g. 13000), or 0.
fn driver_cuda_version() -> i32 {
    let mut version = 0;
    // SAFETY: a plain out-parameter; the driver is initialized before any context exists.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };
    version
}

/// (SD Bench) The SASS NVRTC assembled beside the PTX when compiling for a real architecture.
///
/// # Safety
/// `program` must be a successfully compiled, not yet destroyed NVRTC program.
unsafe fn get_cubin(program: cudarc::nvrtc::sys::nvrtcProgram) -> Option<Vec<u8>> {
    let mut size = 0usize;
    unsafe { cudarc::nvrtc::sys::nvrtcGetCUBINSize(program, &mut size) }
        .result()
        .ok()?;
    if size == 0 {
        return None;
    }
    let mut cubin = vec![0u8; size];
    unsafe { cudarc::nvrtc::sys::nvrtcGetCUBIN(program, cubin.as_mut_ptr() as *mut c_char) }
        .result()
        .ok()?;
    Some(cubin)
}

impl CudaContext {
    pub fn new(
        compilation_options: CompilationOptions,
        properties: DeviceProperties,
        context: *mut CUctx_st,
        arch: CudaArchitecture,
    ) -> Self {
        // (SD Bench) The architecture, driver, compiler and options all change the code.
        let nvrtc = nvrtc_version();
        let options =
            cubecl_common::hash::StableHasher::hash_one(&format!("{compilation_options:?}"));
        let cache_namespace = kernel_cache::namespace(&[
            "cuda",
            &format!("sm{}", arch.version),
            &format!("driver-cuda{}", driver_cuda_version()),
            &format!("nvrtc{}.{}", nvrtc.0, nvrtc.1),
            &format!("options{:08x}", options as u32),
        ]);
        Self {
            context,
            module_names: HashMap::new(),
            cache_namespace,
            nvrtc_version: nvrtc,
            arch,
            timestamps: TimestampProfiler::default(),
            compilation_options,
            properties,
        }
    }

    /// Switches the current CUDA context to this context.
    pub fn unsafe_set_current(&self) -> Result<(), DriverError> {
        // SAFETY: `self.context` is a valid CUDA context obtained from `primary_ctx::retain`
        // during server initialization and remains valid for the server's lifetime.
        unsafe { cudarc::driver::result::ctx::set_current(self.context) }
    }

    pub fn compile_kernel(
        &mut self,
        kernel_id: &KernelId,
        kernel: Box<dyn CubeTask<CudaCompiler>>,
        mode: ExecutionMode,
        logger: Arc<ServerLogger>,
    ) -> Result<(), LaunchError> {
        // (SD Bench) The kernel store first: a hit skips code generation, NVRTC and the JIT.
        let started = Instant::now();
        let key = kernel_id.stable_hash();
        if let Some(entry) =
            kernel_cache::load(&self.cache_namespace, key).and_then(|b| CachedKernel::decode(&b))
        {
            let loaded = self.load_image(
                &entry.image,
                kernel_id.clone(),
                entry.entrypoint_name,
                kernel_id.cube_dim,
                entry.shared_mem_bytes,
            );
            if loaded.is_ok() {
                log::trace!("Using the kernel cache");
                kernel_cache::record_hit(started.elapsed());
                return Ok(());
            }
        }

        log::trace!("Compiling kernel");

        validate_cube_dim(&self.properties, kernel_id)?;
        validate_units(&self.properties, kernel_id)?;

        let mut kernel_compiled = kernel.compile(
            &mut Default::default(),
            &self.compilation_options,
            mode,
            kernel.address_type(),
        )?;

        self.validate_shared(&kernel_compiled.repr)?;

        if logger.compilation_activated() {
            kernel_compiled.debug_info = Some(DebugInformation::new("cpp", kernel_id.clone()));

            if let Ok(formatted) = format_cpp(&kernel_compiled.source) {
                kernel_compiled.source = formatted;
            }
        }

        let cube_dim = kernel_compiled.cube_dim;
        let arch = if self.arch.version >= 90 {
            format!("--gpu-architecture=sm_{}a", self.arch)
        } else {
            format!("--gpu-architecture=sm_{}", self.arch)
        };

        let include_path = include_path();
        let include_option = format!("--include-path={}", include_path.to_str().unwrap());
        let cccl_include_path = cccl_include_path();
        let cccl_include_option = format!("--include-path={}", cccl_include_path.to_str().unwrap());
        let mut options = vec![arch.as_str(), include_option.as_str(), "-lineinfo"];
        if cccl_include_path.exists() {
            options.push(&cccl_include_option);
        }

        logger.log_compilation(&kernel_compiled);

        // (SD Bench) NVRTC's automatic precompiled headers (CUDA 12.8+): the headers are parsed
        // once per process instead of once per kernel (0.67x NVRTC time on the captured kernels).
        // A compilation that fails with it is tried once more without it.
        let with_pch = self.nvrtc_version >= (12, 8);
        let mut compiled = None;
        if with_pch {
            let mut pch_options = options.clone();
            pch_options.push("-pch");
            compiled = nvrtc_compile(&kernel_compiled.source, &pch_options).ok();
        }
        let (ptx, cubin) = match compiled {
            Some(images) => images,
            None => nvrtc_compile(&kernel_compiled.source, &options).map_err(|log| {
                let source = kernel
                    .compile(
                        &mut Default::default(),
                        &self.compilation_options,
                        mode,
                        kernel.address_type(),
                    )
                    .map(|compiled| compiled.source)
                    .unwrap_or_default();
                CompilationError::Generic {
                    reason: format!("{log}\n[Source]  \n{source}"),
                    backtrace: BackTrace::capture(),
                }
            })?,
        };

        let repr = kernel_compiled.repr.unwrap();
        let shared_mem_bytes = repr.shared_memory_size();

        // (SD Bench) The cubin NVRTC assembled for this GPU: loading it skips the driver's second
        // PTX-to-SASS pass. PTX where there is none or the driver refuses it.
        let mut image = None;
        if let Some(cubin) = cubin
            && self
                .load_image(
                    &cubin,
                    kernel_id.clone(),
                    kernel_compiled.entrypoint_name.clone(),
                    cube_dim,
                    shared_mem_bytes,
                )
                .is_ok()
        {
            image = Some(cubin);
        }
        let image = match image {
            Some(cubin) => cubin,
            None => {
                let ptx: Vec<u8> = ptx.iter().map(|&c| c as u8).collect();
                self.load_image(
                    &ptx,
                    kernel_id.clone(),
                    kernel_compiled.entrypoint_name.clone(),
                    cube_dim,
                    shared_mem_bytes,
                )?;
                ptx
            }
        };
        kernel_cache::record_compiled(started.elapsed());
        kernel_cache::store(
            &self.cache_namespace,
            key,
            &CachedKernel {
                entrypoint_name: kernel_compiled.entrypoint_name,
                shared_mem_bytes,
                image,
            }
            .encode(),
        );
        Ok(())
    }

    /// Loads a module image (a cubin, or null-terminated PTX) and registers its kernel.
    fn load_image(
        &mut self,
        image: &[u8],
        kernel_id: KernelId,
        entrypoint_name: String,
        cube_dim: CubeDim,
        shared_mem_bytes: usize,
    ) -> Result<(), CompilationError> {
        let func_name = CString::new(entrypoint_name).map_err(|err| CompilationError::Generic {
            reason: format!("Invalid entry point name: {err:?}"),
            backtrace: BackTrace::capture(),
        })?;
        // SAFETY: `image` is a cubin or a null-terminated PTX from NVRTC (or the kernel store,
        // whose entries are checksummed). `func_name` is a null-terminated `CString` matching the
        // kernel entry point in the compiled module.
        let func = unsafe {
            let module = cudarc::driver::result::module::load_data(image.as_ptr() as *const _)
                .map_err(|err| CompilationError::Generic {
                    reason: format!("Unable to load the module: {err:?}"),
                    backtrace: BackTrace::capture(),
                })?;

            cudarc::driver::result::module::get_function(module, func_name).map_err(|err| {
                CompilationError::Generic {
                    reason: format!("Unable to fetch the function from the module: {err:?}"),
                    backtrace: BackTrace::capture(),
                }
            })?
        };

        self.module_names.insert(
            kernel_id.clone(),
            CompiledKernel {
                cube_dim,
                shared_mem_bytes,
                func,
            },
        );

        Ok(())
    }

    pub fn execute_task(
        &mut self,
        stream: &mut Stream,
        kernel_id: KernelId,
        dispatch_count: (u32, u32, u32),
        tensor_maps: &[CUtensorMap],
        resources: &[GpuResource],
        const_info: Option<*mut c_void>,
    ) -> Result<(), LaunchError> {
        let mut bindings = tensor_maps
            .iter()
            .map(|map| map as *const _ as *mut c_void)
            .collect::<Vec<_>>();
        bindings.extend(resources.iter().map(|memory| memory.binding));
        bindings.extend(const_info);

        let kernel = self.module_names.get(&kernel_id).unwrap();
        let cube_dim = kernel.cube_dim;
        // SAFETY: `kernel.func` is a valid function handle from a loaded module.
        // `stream.sys` is a valid CUDA stream. `bindings` contains valid device pointers
        // for all kernel arguments. The dispatch and cube dimensions are validated by
        // the caller.
        unsafe {
            cudarc::driver::result::function::set_function_attribute(
                kernel.func,
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                kernel.shared_mem_bytes as i32,
            )
            .map_err(|err| LaunchError::Unknown {
                reason: format!("{err:?}"),
                backtrace: BackTrace::capture(),
            })?;
            cudarc::driver::result::launch_kernel(
                kernel.func,
                dispatch_count,
                (cube_dim.x, cube_dim.y, cube_dim.z),
                // Shared memory is collected into a single buffer, with each shared memory being
                // an offset pointer
                kernel.shared_mem_bytes as u32,
                stream.sys,
                &mut bindings,
            )
            .map_err(|err| LaunchError::Unknown {
                reason: format!("{err:?}"),
                backtrace: BackTrace::capture(),
            })?;
        };

        Ok(())
    }

    fn validate_shared(&self, repr: &Option<CudaComputeKernel>) -> Result<(), LaunchError> {
        let requested = repr.as_ref().map(|repr| repr.shared_memory_size());
        let max = self.properties.hardware.max_shared_memory_size;
        if let Some(requested) = requested
            && requested > max
        {
            Err(ResourceLimitError::SharedMemory {
                requested,
                max,
                backtrace: BackTrace::capture(),
            }
            .into())
        } else {
            Ok(())
        }
    }
}

/// (SD Bench) Compiles `source` with NVRTC: its PTX (null-terminated) and, when NVRTC built one,
/// its cubin; or NVRTC's log. The program is destroyed either way.
fn nvrtc_compile(source: &str, options: &[&str]) -> Result<(Vec<c_char>, Option<Vec<u8>>), String> {
    let source = CString::from_str(source).map_err(|err| format!("{err:?}"))?;
    let program = cudarc::nvrtc::result::create_program(source.as_c_str(), None)
        .map_err(|err| format!("{err:?}"))?;
    // SAFETY: `program` was just created and is destroyed below, after its last use. The
    // source and options outlive the call.
    let result = unsafe {
        if cudarc::nvrtc::result::compile_program(program, options).is_err() {
            let log = cudarc::nvrtc::result::get_program_log(program)
                .map(|raw| CStr::from_ptr(raw.as_ptr()).to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut message = "[Compilation Error] ".to_string();
            for line in log.split('\n').filter(|line| !line.is_empty()) {
                message += format!("\n    {line}").as_str();
            }
            Err(message)
        } else {
            cudarc::nvrtc::result::get_ptx(program)
                .map(|ptx| (ptx, get_cubin(program)))
                .map_err(|err| format!("{err:?}"))
        }
    };
    // SAFETY: created above, not used after this.
    unsafe { cudarc::nvrtc::result::destroy_program(program) }.ok();
    result
}
