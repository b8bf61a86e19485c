// Minimal JSON reader for the emulator's config file (written by rig/rigs/emulated/radiospec.py).
// Only what the config needs: objects, arrays, numbers, strings, booleans, null.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace rigemu
{

class Json
{
  public:
    enum class Type
    {
        Null,
        Bool,
        Number,
        String,
        Array,
        Object
    };

    static Json Parse(const std::string& text);
    static Json ParseFile(const std::string& path);

    Type type = Type::Null;
    bool boolean = false;
    double number = 0.0;
    std::string string;
    std::vector<Json> array;
    std::map<std::string, Json> object;

    bool Has(const std::string& key) const;
    // Accessors throw std::runtime_error naming the key, so a bad config fails loudly.
    const Json& At(const std::string& key) const;
    double Num(const std::string& key) const;
    double Num(const std::string& key, double fallback) const;
    std::string Str(const std::string& key) const;
    std::string Str(const std::string& key, const std::string& fallback) const;
};

} // namespace rigemu
