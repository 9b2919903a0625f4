#pragma once
// Service registry: how one plugin offers an interface to the others (the
// realtime module offering "hold this connection" to the frontends, say).
//
// A service is a pure-abstract class with two static members that name it:
//
//   class hold_service {
//   public:
//       static constexpr std::string_view service_name = "m0.realtime.hold";
//       static constexpr unsigned service_version = 1;
//       virtual ~hold_service() = default;
//       virtual void hold(...) = 0;
//   };
//
// The provider registers an implementation while it is built (its factory or
// constructor); consumers look it up by name and version — never by
// dynamic_cast across shared objects, whose type information need not match.
// A changed interface gets a new version; a provider may register several.
// Implementations live as long as their plugin object, which lives until the
// process has stopped serving.
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace m0 {

class service_registry {
public:
    // Registers `impl` as `Service`. Throws std::logic_error if that name and
    // version is already provided (two plugins offering one service is a
    // deployment error, reported at start-up).
    template <class Service>
    void provide(Service& impl, std::string_view provider) {
        std::lock_guard lock(mutex_);
        auto [it, inserted] = services_.try_emplace(key(Service::service_name, Service::service_version),
                                                    entry{&impl, std::string(provider)});
        if (!inserted)
            throw std::logic_error("service " + std::string(Service::service_name) + " v" +
                                   std::to_string(Service::service_version) + " is provided by both " +
                                   it->second.provider + " and " + std::string(provider));
    }

    // The registered implementation, or null when no plugin provides it.
    template <class Service>
    Service* find() const {
        std::lock_guard lock(mutex_);
        auto it = services_.find(key(Service::service_name, Service::service_version));
        return it == services_.end() ? nullptr : static_cast<Service*>(it->second.impl);
    }

    // Who provides a service ("" if nobody): for error messages.
    std::string provider_of(std::string_view name, unsigned version) const {
        std::lock_guard lock(mutex_);
        auto it = services_.find(key(name, version));
        return it == services_.end() ? std::string() : it->second.provider;
    }

private:
    struct entry {
        void* impl;
        std::string provider;
    };
    static std::pair<std::string, unsigned> key(std::string_view name, unsigned version) {
        return {std::string(name), version};
    }

    mutable std::mutex mutex_;
    std::map<std::pair<std::string, unsigned>, entry> services_;
};

}  // namespace m0
