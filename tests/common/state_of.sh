# Shell helpers the script tests share without side effects; source it: . tests/common/state_of.sh
# state_of FILE KEY: the value of train.state[KEY] (e.g. step) in a nazar checkpoint (safetensors
# metadata).
state_of() {
    /usr/bin/python3 -c 'import json,struct,sys; b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[:8])[0]; print(json.loads(json.loads(b[8:8+n])["__metadata__"]["train.state"])[sys.argv[2]])' "$1" "$2"
}
