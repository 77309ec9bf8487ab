"""The Vulkan device API: the Vulkan loader (``libvulkan.so.1``) through ctypes.

Imported only when memory or a kernel is first asked of a ``vulkan`` device
(see ``ember.runtime.device_api``). Devices are the loader's physical devices,
GPUs first (Mesa's lavapipe, a CPU device named "llvmpipe", runs where there is
no GPU). Each device gets one logical device with one compute queue.

Memory is host-visible and coherent, mapped for its lifetime: a handle is the
mapped address, so copies are ``memmove`` once the queued kernels are done.
A program is the launch plan's binary, JSON of ``{kernel: base64 SPIR-V}``; a
kernel's compute pipeline is made at its first launch, with one storage buffer
binding per launch argument. Each launch is one command buffer (a barrier
after the work before it, the dispatch, a barrier making its writes visible to
the host) submitted with a fence; ``sync`` waits for the fences.
"""

import base64
import binascii
import ctypes
import json
import threading
from ctypes import POINTER, Structure, byref, c_char_p, c_float, c_int32, c_size_t
from ctypes import c_uint32 as u32
from ctypes import c_uint64 as u64
from ctypes import c_void_p as ptr

from .device_api import DeviceAPI
from .errors import EmberError

LIBRARY = "libvulkan.so.1"
"""The Vulkan loader (Debian: libvulkan1), which finds the drivers listed in
``/usr/share/vulkan/icd.d`` (lavapipe: mesa-vulkan-drivers)."""

_API_VERSION = (1 << 22) | (2 << 12)  # Vulkan 1.2
_QUEUE_COMPUTE = 0x2
_HOST_VISIBLE_COHERENT = 0x2 | 0x4
_STORAGE_BUFFER = 7  # VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
_STAGE_COMPUTE = 0x20
_BIND_COMPUTE = 1
_COMPUTE_SHADER, _HOST = 0x800, 0x4000  # pipeline stages
_SHADER_READ, _SHADER_WRITE, _HOST_READ = 0x20, 0x40, 0x2000  # access
_DEVICE_TYPE_CPU = 4
_OUT_OF_POOL_MEMORY = -1000069000
_WHOLE_SIZE = 2**64 - 1  # VK_WHOLE_SIZE, and UINT64_MAX
_MAX_PENDING = 256  # launches in flight before a launch waits for them

_RESULTS = {
    -1: "VK_ERROR_OUT_OF_HOST_MEMORY",
    -2: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
    -3: "VK_ERROR_INITIALIZATION_FAILED",
    -4: "VK_ERROR_DEVICE_LOST",
    -5: "VK_ERROR_MEMORY_MAP_FAILED",
    -7: "VK_ERROR_EXTENSION_NOT_PRESENT",
    -8: "VK_ERROR_FEATURE_NOT_PRESENT",
    -9: "VK_ERROR_INCOMPATIBLE_DRIVER",
    -13: "VK_ERROR_UNKNOWN",
    -1000012000: "VK_ERROR_INVALID_SHADER_NV",
    _OUT_OF_POOL_MEMORY: "VK_ERROR_OUT_OF_POOL_MEMORY",
    2: "VK_TIMEOUT",
}


_TYPES = {"u": u32, "q": u64, "p": ptr, "s": c_char_p, "z": c_size_t}


def _struct(name: str, fields: str, *extra: tuple[str, type]) -> type[Structure]:
    """A C struct from "name:t ..." (t: u uint32, q uint64, p pointer, s
    string, z size_t; u by default), then `extra` fields."""
    spec = [
        (f.partition(":")[0], _TYPES[f.partition(":")[2] or "u"])
        for f in fields.split()
    ]
    return type(name, (Structure,), {"_fields_": [*spec, *extra]})


def _info(name: str, fields: str, *extra: tuple[str, type]) -> type[Structure]:
    """A Vk*Info-like struct: sType and pNext first."""
    return _struct(name, f"sType pNext:p {fields}", *extra)


_AppInfo = _info(
    "VkApplicationInfo", "app:s appVersion engine:s engineVersion apiVersion"
)
_InstanceInfo = _info(
    "VkInstanceCreateInfo", "flags app:p layerCount layers:p extensionCount exts:p"
)
_QueueFamily = _struct("VkQueueFamilyProperties", "queueFlags queueCount a b c d")
# memoryTypes: (propertyFlags, heapIndex) pairs
_MemoryProperties = _struct(
    "VkPhysicalDeviceMemoryProperties",
    "memoryTypeCount",
    ("memoryTypes", u32 * 64),
    ("memoryHeapCount", u32),
    ("memoryHeaps", u64 * 32),
)
_QueueInfo = _info(
    "VkDeviceQueueCreateInfo", "flags family count", ("priorities", POINTER(c_float))
)
_DeviceInfo = _info(
    "VkDeviceCreateInfo",
    "flags queueCount queues:p layerCount layers:p extensionCount exts:p features:p",
)
# VkPhysicalDeviceFeatures2 and the Vulkan 1.1 / 1.2 feature structs: VkBool32s
_Features2 = _info("VkPhysicalDeviceFeatures2", "", ("features", u32 * 55))
_Features11 = _info("VkPhysicalDeviceVulkan11Features", "", ("features", u32 * 12))
_Features12 = _info("VkPhysicalDeviceVulkan12Features", "", ("features", u32 * 47))
_BufferInfo = _info(
    "VkBufferCreateInfo", "flags size:q usage sharing familyCount families:p"
)
_MemoryRequirements = _struct("VkMemoryRequirements", "size:q alignment:q typeBits")
_AllocateInfo = _info("VkMemoryAllocateInfo", "size:q memoryTypeIndex")
_ShaderInfo = _info("VkShaderModuleCreateInfo", "flags codeSize:z code:p")
_Binding = _struct(
    "VkDescriptorSetLayoutBinding", "binding type count stages samplers:p"
)
_SetLayoutInfo = _info("VkDescriptorSetLayoutCreateInfo", "flags count bindings:p")
_PipelineLayoutInfo = _info(
    "VkPipelineLayoutCreateInfo", "flags setCount sets:p pushCount pushes:p"
)
_StageInfo = _info(
    "VkPipelineShaderStageCreateInfo", "flags stage module:q name:s special:p"
)
_PipelineInfo = _info(
    "VkComputePipelineCreateInfo",
    "flags",
    ("stage", _StageInfo),
    ("layout", u64),
    ("base", u64),
    ("baseIndex", c_int32),
)
_PoolSize = _struct("VkDescriptorPoolSize", "type count")
_PoolInfo = _info("VkDescriptorPoolCreateInfo", "flags maxSets sizeCount sizes:p")
_SetAllocateInfo = _info("VkDescriptorSetAllocateInfo", "pool:q count layouts:p")
_BufferRange = _struct("VkDescriptorBufferInfo", "buffer:q offset:q range:q")
_Write = _info(
    "VkWriteDescriptorSet",
    "set:q binding element count type images:p buffers:p views:p",
)
_CommandPoolInfo = _info("VkCommandPoolCreateInfo", "flags family")
_CommandBufferInfo = _info("VkCommandBufferAllocateInfo", "pool:q level count")
_BeginInfo = _info("VkCommandBufferBeginInfo", "flags inheritance:p")
_Barrier = _info("VkMemoryBarrier", "srcAccess dstAccess")
_SubmitInfo = _info(
    "VkSubmitInfo",
    "waitCount waits:p waitStages:p count buffers:p signalCount signals:p",
)
_FenceInfo = _info("VkFenceCreateInfo", "flags")

_P = POINTER
_VOID, _RESULT = None, c_int32
# dispatchable handles (instance, devices, queue, command buffer) are pointers,
# the others 64-bit integers
_PROTOTYPES = {
    "vkCreateInstance": (_RESULT, [ptr, ptr, _P(ptr)]),
    "vkEnumeratePhysicalDevices": (_RESULT, [ptr, _P(u32), ptr]),
    "vkGetPhysicalDeviceProperties": (_VOID, [ptr, ptr]),
    "vkGetPhysicalDeviceQueueFamilyProperties": (_VOID, [ptr, _P(u32), ptr]),
    "vkGetPhysicalDeviceMemoryProperties": (_VOID, [ptr, ptr]),
    "vkGetPhysicalDeviceFeatures2": (_VOID, [ptr, ptr]),
    "vkCreateDevice": (_RESULT, [ptr, ptr, ptr, _P(ptr)]),
    "vkGetDeviceQueue": (_VOID, [ptr, u32, u32, _P(ptr)]),
    "vkCreateBuffer": (_RESULT, [ptr, ptr, ptr, _P(u64)]),
    "vkDestroyBuffer": (_VOID, [ptr, u64, ptr]),
    "vkGetBufferMemoryRequirements": (_VOID, [ptr, u64, ptr]),
    "vkAllocateMemory": (_RESULT, [ptr, ptr, ptr, _P(u64)]),
    "vkFreeMemory": (_VOID, [ptr, u64, ptr]),
    "vkBindBufferMemory": (_RESULT, [ptr, u64, u64, u64]),
    "vkMapMemory": (_RESULT, [ptr, u64, u64, u64, u32, _P(ptr)]),
    "vkCreateShaderModule": (_RESULT, [ptr, ptr, ptr, _P(u64)]),
    "vkDestroyShaderModule": (_VOID, [ptr, u64, ptr]),
    "vkCreateDescriptorSetLayout": (_RESULT, [ptr, ptr, ptr, _P(u64)]),
    "vkDestroyDescriptorSetLayout": (_VOID, [ptr, u64, ptr]),
    "vkCreatePipelineLayout": (_RESULT, [ptr, ptr, ptr, _P(u64)]),
    "vkDestroyPipelineLayout": (_VOID, [ptr, u64, ptr]),
    "vkCreateComputePipelines": (_RESULT, [ptr, u64, u32, ptr, ptr, _P(u64)]),
    "vkDestroyPipeline": (_VOID, [ptr, u64, ptr]),
    "vkCreateDescriptorPool": (_RESULT, [ptr, ptr, ptr, _P(u64)]),
    "vkAllocateDescriptorSets": (_RESULT, [ptr, ptr, _P(u64)]),
    "vkFreeDescriptorSets": (_RESULT, [ptr, u64, u32, _P(u64)]),
    "vkUpdateDescriptorSets": (_VOID, [ptr, u32, ptr, u32, ptr]),
    "vkCreateCommandPool": (_RESULT, [ptr, ptr, ptr, _P(u64)]),
    "vkAllocateCommandBuffers": (_RESULT, [ptr, ptr, _P(ptr)]),
    "vkFreeCommandBuffers": (_VOID, [ptr, u64, u32, _P(ptr)]),
    "vkBeginCommandBuffer": (_RESULT, [ptr, ptr]),
    "vkEndCommandBuffer": (_RESULT, [ptr]),
    "vkCmdPipelineBarrier": (_VOID, [ptr, u32, u32, u32, u32, ptr, u32, ptr, u32, ptr]),
    "vkCmdBindPipeline": (_VOID, [ptr, u32, u64]),
    "vkCmdBindDescriptorSets": (_VOID, [ptr, u32, u64, u32, u32, _P(u64), u32, ptr]),
    "vkCmdDispatch": (_VOID, [ptr, u32, u32, u32]),
    "vkQueueSubmit": (_RESULT, [ptr, u32, ptr, u64]),
    "vkCreateFence": (_RESULT, [ptr, ptr, ptr, _P(u64)]),
    "vkWaitForFences": (_RESULT, [ptr, u32, _P(u64), u32, u64]),
    "vkDestroyFence": (_VOID, [ptr, u64, ptr]),
}


def _result_name(rc: int) -> str:
    return f"{_RESULTS.get(rc, 'VkResult')} ({rc})"


class _Device:
    """One physical device's logical device, queue, pools and launches in flight."""

    def __init__(self, physical: int):
        self.physical = physical
        self.device = self.queue = 0
        self.family = self.memory_type = 0
        self.command_pool = self.descriptor_pool = 0
        self.pending: list[tuple[int, int, int]] = []  # (fence, command buffer, set)
        self.buffers: dict[int, tuple[int, int]] = {}  # address -> (buffer, memory)


class _Kernel:
    """A shader module and its pipelines, by number of storage buffers."""

    def __init__(self, module: int, name: str):
        self.module, self.name = module, name
        self.pipelines: dict[int, tuple[int, int, int]] = {}  # n -> (set, layout, pipe)


class VulkanAPI(DeviceAPI):
    """``DeviceAPI`` over the Vulkan loader; one per process.

    Example:
        >>> from ember.runtime.device_api import device_api
        >>> device_api(device("vulkan", 0)).describe(0)["name"]  # doctest: +SKIP
        'llvmpipe (LLVM 15.0.6, 256 bits)'
    """

    name = "vulkan"

    def __init__(self):
        """Load ``libvulkan.so.1``, create an instance and list its devices.

        Raises:
            EmberError: no loader, no driver, or no device.
        """
        try:
            lib = ctypes.CDLL(LIBRARY)
        except OSError as e:
            raise EmberError(
                f"vulkan: no Vulkan loader ({LIBRARY}): {e}; install it (Debian: "
                "libvulkan1) and a driver (a GPU's, or mesa-vulkan-drivers' lavapipe)"
            ) from None
        self._f = {}
        for name, (restype, argtypes) in _PROTOTYPES.items():
            function = getattr(lib, name)
            function.argtypes, function.restype = argtypes, restype
            self._f[name] = function
        self._lock = threading.RLock()
        app = _AppInfo(0, None, b"ember", 1, b"ember", 1, _API_VERSION)
        info = _InstanceInfo(1, None, 0, ctypes.addressof(app), 0, None, 0, None)
        instance = ptr()
        rc = self._f["vkCreateInstance"](byref(info), None, byref(instance))
        if rc != 0:
            raise EmberError(
                f"vulkan: vkCreateInstance failed: {_result_name(rc)}; is a Vulkan "
                "driver installed (a GPU's, or mesa-vulkan-drivers' lavapipe)?"
            )
        self._instance = instance.value
        count = u32()
        self._call("vulkan", "vkEnumeratePhysicalDevices", instance, byref(count), None)
        found = (ptr * count.value)()
        self._call(
            "vulkan", "vkEnumeratePhysicalDevices", instance, byref(count), found
        )
        if not count.value:
            raise EmberError(
                "vulkan: the Vulkan drivers found no device; install one (a GPU's, "
                "or mesa-vulkan-drivers' lavapipe)"
            )
        physical = [found[i] for i in range(count.value)]
        physical.sort(key=lambda d: self._properties(d)[1] == _DEVICE_TYPE_CPU)
        self._devices = [_Device(p) for p in physical]
        self._programs: dict[int, dict[str, int]] = {}
        self._kernels: dict[int, _Kernel] = {}
        self._next = 1

    def _call(self, where: str, name: str, *args, detail: str = "") -> None:
        rc = self._f[name](*args)
        if rc != 0:
            raise EmberError(f"{where}: {name}{detail} failed: {_result_name(rc)}")

    def _create(self, where: str, name: str, device: int, info) -> int:
        """Call a vkCreate* function of `device`; the new handle."""
        handle = u64()
        self._call(where, name, device, byref(info), None, byref(handle))
        return handle.value

    def _properties(self, physical: int) -> tuple[str, int, int]:
        """A physical device's name, type and API version."""
        raw = ctypes.create_string_buffer(2048)  # VkPhysicalDeviceProperties: 824
        self._f["vkGetPhysicalDeviceProperties"](physical, raw)
        api, device_type = (
            int.from_bytes(raw.raw[i : i + 4], "little") for i in (0, 16)
        )
        name = raw.raw[20:276].split(b"\0", 1)[0].decode(errors="replace")
        return name, device_type, api

    def device_count(self) -> int:
        return len(self._devices)

    def describe(self, dev_id: int) -> dict:
        name, device_type, api = self._properties(self._device(dev_id).physical)
        version = f"{api >> 22}.{(api >> 12) & 0x3FF}.{api & 0xFFF}"
        return {"name": name, "device_type": device_type, "api_version": version}

    def _device(self, dev_id: int) -> _Device:
        self.check_id(dev_id)
        return self._devices[dev_id]

    def _open(self, dev_id: int) -> _Device:
        """The device, its logical device, queue and pools made on first use."""
        d = self._device(dev_id)
        if d.device:
            return d
        where = f"vulkan({dev_id})"
        n = u32()
        get_families = self._f["vkGetPhysicalDeviceQueueFamilyProperties"]
        get_families(d.physical, byref(n), None)
        families = (_QueueFamily * n.value)()
        get_families(d.physical, byref(n), families)
        compute = [i for i, f in enumerate(families) if f.queueFlags & _QUEUE_COMPUTE]
        if not compute:
            raise EmberError(f"{where}: the device has no compute queue")
        d.family = compute[0]
        memory = _MemoryProperties()
        self._f["vkGetPhysicalDeviceMemoryProperties"](d.physical, byref(memory))
        types = [memory.memoryTypes[2 * i] for i in range(memory.memoryTypeCount)]
        coherent = [
            i
            for i, f in enumerate(types)
            if f & _HOST_VISIBLE_COHERENT == _HOST_VISIBLE_COHERENT
        ]
        if not coherent:
            raise EmberError(f"{where}: the device has no host-visible coherent memory")
        d.memory_type = coherent[0]
        # every feature the device has (64-bit and 8/16-bit types in shaders),
        # but bounds checks on every access
        f12 = _Features12(51, None)
        f11 = _Features11(49, ctypes.addressof(f12))
        features = _Features2(1000059000, ctypes.addressof(f11))
        self._f["vkGetPhysicalDeviceFeatures2"](d.physical, byref(features))
        features.features[0] = 0  # robustBufferAccess
        priority = c_float(1.0)
        queue_info = _QueueInfo(2, None, 0, d.family, 1, ctypes.pointer(priority))
        info = _DeviceInfo(
            3, ctypes.addressof(features), 0, 1, ctypes.addressof(queue_info)
        )
        device, queue = ptr(), ptr()
        self._call(
            where, "vkCreateDevice", d.physical, byref(info), None, byref(device)
        )
        self._f["vkGetDeviceQueue"](device, d.family, 0, byref(queue))
        d.device, d.queue = device.value or 0, queue.value or 0
        # command buffers are reset one by one; descriptor sets freed one by one
        pool = _CommandPoolInfo(39, None, 0x2, d.family)
        d.command_pool = self._create(where, "vkCreateCommandPool", d.device, pool)
        sizes = _PoolSize(_STORAGE_BUFFER, 64 * _MAX_PENDING)
        pool = _PoolInfo(33, None, 0x1, 2 * _MAX_PENDING, 1, ctypes.addressof(sizes))
        d.descriptor_pool = self._create(
            where, "vkCreateDescriptorPool", d.device, pool
        )
        return d

    # memory

    def alloc(self, dev_id: int, nbytes: int) -> int:
        with self._lock:
            d = self._open(dev_id)
            where = f"vulkan({dev_id})"
            usage = 0x20 | 0x1 | 0x2  # storage buffer, transfer source and target
            info = _BufferInfo(12, None, 0, nbytes, usage, 0, 0, None)
            buffer = self._create(where, "vkCreateBuffer", d.device, info)
            try:
                needs = _MemoryRequirements()
                self._f["vkGetBufferMemoryRequirements"](d.device, buffer, byref(needs))
                if not needs.typeBits >> d.memory_type & 1:
                    raise EmberError(
                        f"{where}: a storage buffer cannot live in host-visible memory"
                    )
                allocate = _AllocateInfo(5, None, needs.size, d.memory_type)
                memory = u64()
                self._call(
                    where,
                    "vkAllocateMemory",
                    d.device,
                    byref(allocate),
                    None,
                    byref(memory),
                    detail=f"({nbytes} bytes)",
                )
            except EmberError:
                self._f["vkDestroyBuffer"](d.device, buffer, None)
                raise
            mapped = ptr()
            try:
                self._call(where, "vkBindBufferMemory", d.device, buffer, memory, 0)
                self._call(
                    where, "vkMapMemory", d.device, memory, 0, _WHOLE_SIZE, 0,
                    byref(mapped),
                )  # fmt: skip
            except EmberError:
                self._f["vkDestroyBuffer"](d.device, buffer, None)
                self._f["vkFreeMemory"](d.device, memory, None)
                raise
            address = mapped.value or 0
            d.buffers[address] = (buffer, memory.value)
            return address

    def free(self, dev_id: int, handle: int) -> None:
        with self._lock:
            d = self._open(dev_id)
            self._wait(dev_id, d)  # a queued launch may still use it
            buffer, memory = d.buffers.pop(handle)
            self._f["vkDestroyBuffer"](d.device, buffer, None)
            self._f["vkFreeMemory"](d.device, memory, None)  # unmaps it

    def copy_from_host(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        self.sync(dev_id)
        ctypes.memmove(dst, src, nbytes)

    def copy_to_host(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        self.sync(dev_id)
        ctypes.memmove(dst, src, nbytes)

    def copy_on_device(self, dev_id: int, dst: int, src: int, nbytes: int) -> None:
        self.sync(dev_id)
        ctypes.memmove(dst, src, nbytes)

    def sync(self, dev_id: int) -> None:
        with self._lock:
            self._wait(dev_id, self._open(dev_id))

    def _wait(self, dev_id: int, d: _Device) -> None:
        """Wait for the launches in flight and free what they held."""
        if not d.pending:
            return
        pending, d.pending = d.pending, []
        fences = (u64 * len(pending))(*(p[0] for p in pending))
        try:
            self._call(
                f"vulkan({dev_id})",
                "vkWaitForFences",
                d.device,
                len(pending),
                fences,
                1,
                _WHOLE_SIZE,  # no timeout
            )
        finally:
            self._release(d, pending)

    def _release(self, d: _Device, launches: list[tuple[int, int, int]]) -> None:
        for fence, command_buffer, descriptor_set in launches:
            self._f["vkDestroyFence"](d.device, fence, None)
            self._f["vkFreeCommandBuffers"](
                d.device, d.command_pool, 1, byref(ptr(command_buffer))
            )
            self._f["vkFreeDescriptorSets"](
                d.device, d.descriptor_pool, 1, byref(u64(descriptor_set))
            )

    # programs

    def load(self, dev_id: int, source: str, binary: str | None) -> int:
        where = f"vulkan({dev_id})"
        try:
            shaders = {
                k: base64.b64decode(v) for k, v in json.loads(binary or "").items()
            }
        except (ValueError, AttributeError, TypeError, binascii.Error):
            raise EmberError(
                f"{where}: the launch plan's binary is not JSON of base64 SPIR-V "
                "per kernel (build it for target 'vulkan')"
            ) from None
        with self._lock:
            d = self._open(dev_id)
            modules: dict[str, int] = {}
            try:
                for name, code in shaders.items():
                    words = ctypes.create_string_buffer(code, len(code))
                    info = _ShaderInfo(16, None, 0, len(code), ctypes.addressof(words))
                    modules[name] = self._create(
                        f"{where}: kernel {name}",
                        "vkCreateShaderModule",
                        d.device,
                        info,
                    )
            except EmberError:
                for module in modules.values():
                    self._f["vkDestroyShaderModule"](d.device, module, None)
                raise
            handle, self._next = self._next, self._next + 1
            self._programs[handle] = modules
            return handle

    def get_kernel(self, dev_id: int, program: int, name: str) -> int:
        module = self._programs[program].get(name)
        if module is None:
            raise EmberError(
                f"vulkan({dev_id}): the program defines no kernel {name!r}"
            )
        with self._lock:
            handle, self._next = self._next, self._next + 1
            self._kernels[handle] = _Kernel(module, name)
            return handle

    def unload(self, dev_id: int, program: int, kernels: list[int]) -> None:
        with self._lock:
            d = self._open(dev_id)
            self._wait(dev_id, d)
            for handle in kernels:
                for set_layout, layout, pipeline in self._kernels.pop(
                    handle
                ).pipelines.values():
                    self._f["vkDestroyPipeline"](d.device, pipeline, None)
                    self._f["vkDestroyPipelineLayout"](d.device, layout, None)
                    self._f["vkDestroyDescriptorSetLayout"](d.device, set_layout, None)
            for module in self._programs.pop(program).values():
                self._f["vkDestroyShaderModule"](d.device, module, None)

    def _pipeline(self, dev_id: int, d: _Device, kernel: _Kernel, n: int):
        """The kernel's (set layout, pipeline layout, pipeline) for `n` buffers."""
        found = kernel.pipelines.get(n)
        if found is not None:
            return found
        where = f"vulkan({dev_id}): kernel {kernel.name}"
        bindings = (_Binding * n)(
            *(_Binding(i, _STORAGE_BUFFER, 1, _STAGE_COMPUTE, None) for i in range(n))
        )
        info = _SetLayoutInfo(32, None, 0, n, ctypes.addressof(bindings))
        set_layout = self._create(where, "vkCreateDescriptorSetLayout", d.device, info)
        set_layouts = u64(set_layout)
        info = _PipelineLayoutInfo(
            30, None, 0, 1, ctypes.addressof(set_layouts), 0, None
        )
        layout = self._create(where, "vkCreatePipelineLayout", d.device, info)
        stage = _StageInfo(18, None, 0, _STAGE_COMPUTE, kernel.module, b"main", None)
        info = _PipelineInfo(29, None, 0, stage, layout, 0, -1)
        pipeline = u64()
        try:
            self._call(
                where, "vkCreateComputePipelines", d.device, 0, 1, byref(info), None,
                byref(pipeline),
            )  # fmt: skip
        except EmberError:
            self._f["vkDestroyPipelineLayout"](d.device, layout, None)
            self._f["vkDestroyDescriptorSetLayout"](d.device, set_layout, None)
            raise
        found = kernel.pipelines[n] = (set_layout, layout, pipeline.value)
        return found

    def launch(self, dev_id, kernel, grid, block, shared_bytes, pointers) -> None:
        where = f"vulkan({dev_id})"
        if shared_bytes:
            raise EmberError(
                f"{where}: Vulkan shaders take no dynamic shared memory (declare "
                f"shared arrays in the shader); the launch asks {shared_bytes} bytes"
            )
        with self._lock:
            d = self._open(dev_id)
            if len(d.pending) >= _MAX_PENDING:
                self._wait(dev_id, d)
            k = self._kernels[kernel]
            set_layout, layout, pipeline = self._pipeline(dev_id, d, k, len(pointers))
            descriptor_set = self._descriptor_set(dev_id, d, set_layout)
            self._bind(where, d, descriptor_set, pointers)
            command_buffer = self._record(
                where, d, pipeline, layout, descriptor_set, grid
            )
            fence = self._create(where, "vkCreateFence", d.device, _FenceInfo(8))
            buffers = ptr(command_buffer)
            submit = _SubmitInfo(4, None, 0, None, None, 1, ctypes.addressof(buffers))
            launched = (fence, command_buffer, descriptor_set)
            rc = self._f["vkQueueSubmit"](d.queue, 1, byref(submit), fence)
            if rc != 0:
                self._release(d, [launched])
                raise EmberError(
                    f"{where}: vkQueueSubmit(kernel {k.name}, grid {list(grid)}, "
                    f"block {list(block)}) failed: {_result_name(rc)}"
                )
            d.pending.append(launched)

    def _descriptor_set(self, dev_id: int, d: _Device, set_layout: int) -> int:
        layouts = u64(set_layout)
        info = _SetAllocateInfo(
            34, None, d.descriptor_pool, 1, ctypes.addressof(layouts)
        )
        found = u64()
        rc = self._f["vkAllocateDescriptorSets"](d.device, byref(info), byref(found))
        if rc == _OUT_OF_POOL_MEMORY:  # the launches in flight hold the pool
            self._wait(dev_id, d)
            rc = self._f["vkAllocateDescriptorSets"](
                d.device, byref(info), byref(found)
            )
        if rc != 0:
            raise EmberError(
                f"vulkan({dev_id}): vkAllocateDescriptorSets failed: {_result_name(rc)}"
            )
        return found.value

    def _bind(self, where: str, d: _Device, descriptor_set: int, pointers) -> None:
        ranges = []
        for i, address in enumerate(pointers):
            if address not in d.buffers:
                raise EmberError(
                    f"{where}: launch argument {i} is not the start of a buffer "
                    "this device allocated"
                )
            ranges.append(_BufferRange(d.buffers[address][0], 0, _WHOLE_SIZE))
        infos = (_BufferRange * len(ranges))(*ranges)
        writes = (_Write * len(ranges))(
            *(
                _Write(
                    35,
                    None,
                    descriptor_set,
                    i,
                    0,
                    1,
                    _STORAGE_BUFFER,
                    None,
                    ctypes.addressof(infos) + i * ctypes.sizeof(_BufferRange),
                    None,
                )  # fmt: skip
                for i in range(len(ranges))
            )
        )
        self._f["vkUpdateDescriptorSets"](d.device, len(ranges), writes, 0, None)

    def _record(self, where, d: _Device, pipeline, layout, descriptor_set, grid) -> int:
        """A command buffer: barrier, dispatch, barrier to the host."""
        info = _CommandBufferInfo(40, None, d.command_pool, 0, 1)
        command_buffer = ptr()
        self._call(
            where,
            "vkAllocateCommandBuffers",
            d.device,
            byref(info),
            byref(command_buffer),
        )
        cb = command_buffer.value or 0
        f = self._f
        self._call(where, "vkBeginCommandBuffer", cb, byref(_BeginInfo(42, None, 1)))
        before = _Barrier(46, None, _SHADER_WRITE, _SHADER_READ | _SHADER_WRITE)
        f["vkCmdPipelineBarrier"](
            cb, _COMPUTE_SHADER, _COMPUTE_SHADER, 0, 1, byref(before), 0, None, 0, None
        )
        f["vkCmdBindPipeline"](cb, _BIND_COMPUTE, pipeline)
        sets = u64(descriptor_set)
        f["vkCmdBindDescriptorSets"](
            cb, _BIND_COMPUTE, layout, 0, 1, byref(sets), 0, None
        )
        f["vkCmdDispatch"](cb, *grid)
        after = _Barrier(46, None, _SHADER_WRITE, _HOST_READ)
        f["vkCmdPipelineBarrier"](
            cb, _COMPUTE_SHADER, _HOST, 0, 1, byref(after), 0, None, 0, None
        )
        self._call(where, "vkEndCommandBuffer", cb)
        return cb


API = VulkanAPI
"""The device API `ember.runtime.device_api` finds for this kind."""
