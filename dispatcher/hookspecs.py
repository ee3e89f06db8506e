"""The plugin contract, as pluggy hook specifications.

A backend plugin is a module named by an entry point in the group ``ember.backends``::

    [project.entry-points."ember.backends"]
    mydevice = "ember_mydevice.plugin"

The module defines the hooks below, marked with ``ember.dispatcher.hookimpl``. The
docstrings are the contract; ``docs/plugins.md`` expands on them.
"""
import pluggy

hookspec = pluggy.HookspecMarker("ember")
hookimpl = pluggy.HookimplMarker("ember")


@hookspec
def ember_backend():
    """Return one :class:`ember.dispatcher.Backend` instance describing this plugin.

    The instance declares:

    - ``name`` and ``version`` (the plugin's, shown by ``python -m ember backends``);
    - ``api_version``: the backend API it was written against; it must equal
      ``ember.dispatcher.API_VERSION`` or the plugin is rejected with a message naming it;
    - ``device_type``: the device name users write (``"opencl"`` in ``"opencl:1"``);
      two plugins may not claim the same one;
    - ``device_count()``: how many devices are usable now (must never raise; 0 when none);
    - ``allocate(nbytes, index)`` returning a storage object with an ``nbytes`` attribute,
      freed when the last reference goes;
    - ``copy_from_host(storage, byte_offset, host_buffer)`` and
      ``copy_to_host(storage, byte_offset, nbytes)`` returning a host buffer;
    - ``synchronize(index)``;
    - ``kernels``: a mapping from op name (see ``ember.dispatcher.schema``) to a kernel
      ``kernel(out, *inputs, **attrs)``. Every op marked primitive must be present;
    - ``fork_safe`` (default False) and ``is_initialized()`` (default True): whether a
      child forked after the driver started may use the device, and whether it started.

    Called once, when ember first needs a backend (loading is lazy).
    """
